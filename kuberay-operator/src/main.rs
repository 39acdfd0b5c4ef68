//! `kuberay-operator`: the Ray operator's binary; its code is this package's library (`kuberay_operator`).

fn main() -> anyhow::Result<std::process::ExitCode> {
    kuberay_operator::main()
}
