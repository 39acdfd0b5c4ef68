//! KubeRay's published operator memory figures (v0.6.0), read at run time from `shared/bench/`.
//!
//! The CSV (`experiment,pods,operator_memory_mib`) is the source of the numbers; the README's
//! "Published endpoints" sentence is parsed only to cross-check it in the tests.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::Serialize;

/// File name of the published figures inside `shared/bench/`.
pub const CSV_NAME: &str = "kuberay-v0.6.0-memory.csv";

/// One published figure: the operator pod's memory after `pods` Ray pods were created.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PublishedPoint {
    /// Experiment number (1, 2 or 3).
    pub experiment: u8,
    /// Ray pods created.
    pub pods: usize,
    /// Operator pod memory, MiB.
    pub mib: f64,
}

/// The published figures and where they were read from.
#[derive(Clone, Debug, Serialize)]
pub struct Published {
    /// The CSV file they came from.
    pub source: PathBuf,
    /// Every point, in file order.
    pub points: Vec<PublishedPoint>,
}

impl Published {
    /// Reads and parses the CSV at `path`.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let points = parse_csv(&text).with_context(|| format!("parsing {}", path.display()))?;
        Ok(Self {
            source: path.to_path_buf(),
            points,
        })
    }

    /// The points of one experiment, sorted by pods.
    pub fn experiment(&self, experiment: u8) -> Vec<&PublishedPoint> {
        let mut points: Vec<&PublishedPoint> = self.points.iter().filter(|p| p.experiment == experiment).collect();
        points.sort_by_key(|p| p.pods);
        points
    }
}

/// Parses `experiment,pods,operator_memory_mib` rows (header required, blank lines ignored).
pub fn parse_csv(text: &str) -> anyhow::Result<Vec<PublishedPoint>> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').map(str::trim).collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .with_context(|| format!("no `{name}` column in header {header:?}"))
    };
    let (exp_col, pods_col, mib_col) = (column("experiment")?, column("pods")?, column("operator_memory_mib")?);
    let mut points = Vec::new();
    for (index, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let field = |col: usize| {
            fields
                .get(col)
                .copied()
                .with_context(|| format!("row {}: too few fields: {line}", index + 2))
        };
        let experiment: u8 = field(exp_col)?
            .parse()
            .with_context(|| format!("row {}: experiment", index + 2))?;
        let pods: usize = field(pods_col)?
            .parse()
            .with_context(|| format!("row {}: pods", index + 2))?;
        let mib: f64 = field(mib_col)?
            .parse()
            .with_context(|| format!("row {}: MiB", index + 2))?;
        if !(1..=3).contains(&experiment) || !mib.is_finite() || mib <= 0.0 {
            bail!("row {}: implausible figure: {line}", index + 2);
        }
        points.push(PublishedPoint { experiment, pods, mib });
    }
    if points.is_empty() {
        bail!("no published figures");
    }
    Ok(points)
}

/// Parses the README's "experiment N about X MiB" endpoints (whitespace, including line breaks, may separate
/// the words). Only the tests use it, to cross-check the CSV.
#[cfg(test)]
pub fn parse_readme_endpoints(text: &str) -> Vec<(u8, f64)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(4)
        .filter(|w| w[0].eq_ignore_ascii_case("experiment") && w[2] == "about")
        .filter_map(|w| {
            let experiment = w[1].trim_end_matches([',', ':']).parse().ok()?;
            let mib = w[3].trim_end_matches([',', '.']).parse().ok()?;
            Some((experiment, mib))
        })
        .collect()
}

/// Finds the published CSV: `explicit` when given, else `$KUBERAY_BENCH_REFERENCE`, else
/// `bench/<CSV_NAME>` in the reference tree [`kuberay_reference::try_bench_dir`] finds.
pub fn locate(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("KUBERAY_BENCH_REFERENCE") {
        return Ok(PathBuf::from(path));
    }
    let candidate = kuberay_reference::try_bench_dir()
        .map_err(|e| anyhow::anyhow!("{e}; or pass --reference PATH or set KUBERAY_BENCH_REFERENCE"))?
        .join(CSV_NAME);
    if !candidate.is_file() {
        bail!(
            "{} is missing (pass --reference PATH or set KUBERAY_BENCH_REFERENCE)",
            candidate.display()
        );
    }
    Ok(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real() -> Published {
        let path = locate(None).expect("the published figures must be present in shared/bench");
        Published::load(&path).expect("the published figures must parse")
    }

    #[test]
    fn parses_the_real_published_figures() {
        let published = real();
        for experiment in 1..=3 {
            let points = published.experiment(experiment);
            assert!(points.len() >= 5, "experiment {experiment}: {points:?}");
            assert_eq!(points[0].pods, 0, "experiment {experiment} starts at 0 pods");
            assert_eq!(
                points.last().map(|p| p.pods),
                Some(150),
                "experiment {experiment} ends at 150 pods"
            );
            assert!(points.iter().all(|p| (10.0..100.0).contains(&p.mib)));
        }
        let exp1_end = published.experiment(1).last().map(|p| p.mib).unwrap();
        assert!((exp1_end - 36.2).abs() < 0.05, "{exp1_end}");
    }

    #[test]
    fn readme_endpoints_agree_with_the_csv() {
        let published = real();
        let readme = published.source.with_file_name("README.md");
        let text = std::fs::read_to_string(&readme).expect("shared/bench/README.md");
        let endpoints = parse_readme_endpoints(&text);
        assert_eq!(endpoints.len(), 3, "{endpoints:?}");
        for (experiment, mib) in endpoints {
            let csv = published.experiment(experiment).last().map(|p| p.mib).unwrap();
            assert!(
                (csv - mib).abs() < 0.05,
                "experiment {experiment}: README {mib} vs CSV {csv}"
            );
        }
    }

    #[test]
    fn csv_parser_checks_its_input() {
        let ok = parse_csv("experiment,pods,operator_memory_mib\n\n2,10,24.5\n").unwrap();
        assert_eq!(
            ok,
            vec![PublishedPoint {
                experiment: 2,
                pods: 10,
                mib: 24.5
            }]
        );
        // Columns are found by name.
        let reordered = parse_csv("pods,operator_memory_mib,experiment\n10,24.5,2\n").unwrap();
        assert_eq!(reordered, ok);
        assert!(parse_csv("").is_err());
        assert!(parse_csv("experiment,pods\n1,2\n").is_err());
        assert!(parse_csv("experiment,pods,operator_memory_mib\n1,x,3\n").is_err());
        assert!(parse_csv("experiment,pods,operator_memory_mib\n7,1,3\n").is_err());
        assert!(parse_csv("experiment,pods,operator_memory_mib\n").is_err());
    }

    #[test]
    fn readme_parser_tolerates_line_breaks() {
        let text = "experiment 1 about 36.2 MiB, experiment 3 about\n41.6 MiB; experiment x about y";
        assert_eq!(parse_readme_endpoints(text), vec![(1, 36.2), (3, 41.6)]);
    }
}
