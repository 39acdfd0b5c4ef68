//! The comparison with KubeRay's published figures: the printed tables, `report.md`, `results.json` and a
//! hand-written SVG plot of both curves per experiment.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use crate::published::{Published, PublishedPoint};
use crate::run::ExperimentResult;

const MIB: f64 = 1_048_576.0;

/// One row of a comparison table: a published point and our sample at the same pod count.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Ray pods.
    pub pods: usize,
    /// KubeRay v0.6.0, MiB.
    pub kuberay_mib: f64,
    /// Ours (RSS), MiB, when sampled at this pod count.
    pub ours_mib: Option<f64>,
    /// Our anonymous memory (heap, stacks), MiB, when sampled and readable.
    pub ours_anonymous_mib: Option<f64>,
    /// Our proportional set size, MiB, when sampled and readable.
    pub ours_pss_mib: Option<f64>,
    /// `ours / kuberay` (RSS).
    pub ratio: Option<f64>,
}

/// The rows of one experiment, in published order.
pub fn rows(result: &ExperimentResult, published: &Published) -> Vec<Row> {
    published
        .experiment(result.experiment)
        .into_iter()
        .map(|point| {
            let sample = result.at_pods(point.pods);
            let ours_mib = sample.map(|s| s.memory.rss_bytes as f64 / MIB);
            Row {
                pods: point.pods,
                kuberay_mib: point.mib,
                ours_mib,
                ours_anonymous_mib: sample.and_then(|s| s.memory.anonymous_bytes).map(|b| b as f64 / MIB),
                ours_pss_mib: sample.and_then(|s| s.memory.pss_bytes).map(|b| b as f64 / MIB),
                ratio: ours_mib.map(|o| o / point.mib),
            }
        })
        .collect()
}

/// Least-squares slope of `(x, y)` points (0 when undefined).
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    if den == 0.0 { 0.0 } else { num / den }
}

/// MiB-per-pod slope of our anonymous memory (the samples that have it).
pub fn anonymous_slope(result: &ExperimentResult) -> f64 {
    let points: Vec<(f64, f64)> = result
        .samples
        .iter()
        .filter_map(|s| Some((s.pods as f64, s.memory.anonymous_bytes? as f64 / MIB)))
        .collect();
    slope(&points)
}

/// MiB-per-pod slopes of RSS: (KubeRay, ours).
pub fn slopes(result: &ExperimentResult, published: &Published) -> (f64, f64) {
    let theirs: Vec<(f64, f64)> = published
        .experiment(result.experiment)
        .iter()
        .map(|p| (p.pods as f64, p.mib))
        .collect();
    let ours: Vec<(f64, f64)> = result
        .samples
        .iter()
        .map(|s| (s.pods as f64, s.memory.rss_bytes as f64 / MIB))
        .collect();
    (slope(&theirs), slope(&ours))
}

fn fmt_opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

/// The plain-text table of one experiment, as printed.
pub fn text_table(result: &ExperimentResult, published: &Published) -> String {
    let mut out = String::new();
    let steps = result.samples.len().saturating_sub(1);
    let _ = writeln!(
        out,
        "Experiment {}: {} ({steps} steps, {:.1} s here vs {} s published)",
        result.experiment,
        result.description,
        result.wall_ms as f64 / 1000.0,
        steps as u64 * result.published_interval_secs
    );
    let _ = writeln!(
        out,
        "  {:>5}  {:>12}  {:>9}  {:>6}  {:>9}  {:>9}",
        "pods", "KubeRay MiB", "ours MiB", "ratio", "anon MiB", "PSS MiB"
    );
    for row in rows(result, published) {
        let _ = writeln!(
            out,
            "  {:>5}  {:>12.2}  {:>9}  {:>6}  {:>9}  {:>9}",
            row.pods,
            row.kuberay_mib,
            fmt_opt(row.ours_mib, 2),
            fmt_opt(row.ratio, 2),
            fmt_opt(row.ours_anonymous_mib, 2),
            fmt_opt(row.ours_pss_mib, 2)
        );
    }
    let (theirs, ours) = slopes(result, published);
    let _ = writeln!(
        out,
        "  slope: KubeRay {theirs:.3} MiB/pod, ours {ours:.3} MiB/pod (anonymous {:.3})",
        anonymous_slope(result)
    );
    out
}

/// Facts about a whole `memory` run, beside its experiments.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunSummary {
    /// Wall time of the experiments.
    pub wall_secs: f64,
    /// Whether the experiments ran at the same time (each on its own kube-sim, with its own copy of the
    /// binary) rather than one after the other: their wall and convergence times differ between the two.
    pub together: bool,
    /// Pages the kernel reclaimed while they ran (`pgsteal_*` of `/proc/vmstat`), when readable. Reclaim
    /// unmaps file pages, the operator's code among them, so RSS can then read lower than it is.
    pub reclaimed_pages: Option<u64>,
}

impl RunSummary {
    /// The sentence the reports carry about reclaim during the run (none when it could not be read).
    pub fn reclaim_note(&self) -> Option<String> {
        match self.reclaimed_pages? {
            0 => Some("The kernel reclaimed no memory during the run.".to_owned()),
            pages => Some(format!(
                "**The kernel reclaimed {pages} pages ({:.1} MiB) during the run**: the machine was short of memory, \
                 and reclaim unmaps file pages, the operator's code among them, so RSS may read low. Re-run on a \
                 quieter machine.",
                pages as f64 * 4096.0 / MIB
            )),
        }
    }
}

/// `report.md`: every table plus how the numbers were taken.
pub fn markdown(results: &[ExperimentResult], published: &Published, run: &RunSummary) -> String {
    let wall_secs = run.wall_secs;
    let mut out = String::new();
    let _ = writeln!(out, "# kuberay-bench memory\n");
    let _ = writeln!(
        out,
        "The KubeRay operator's memory benchmark replayed against kuberay-rs: the real `kuberay-operator` \
         release binary as a child process, the experiments' RayClusters (head + `small-group`, 1 CPU / 1 Gi \
         each) created on schedule, each step waited on until every pod is Running and every status is \
         `ready`, then the operator's resident memory (`VmRSS`) sampled, with its anonymous memory and \
         proportional set size (`Anonymous`, `Pss` of `/proc/<pid>/smaps_rollup`). KubeRay's column is its \
         published v0.6.0 figure (operator pod memory, Grafana) read from `{}`.\n",
        published.source.display()
    );
    let order = if run.together {
        "the experiments ran at the same time, each on its own kube-sim with its own copy of the operator binary"
    } else {
        "the experiments ran one after the other"
    };
    let _ = writeln!(out, "Total wall time: {wall_secs:.1} s ({order}).\n");
    if let Some(line) = run.reclaim_note() {
        let _ = writeln!(out, "{line}\n");
    }
    for result in results {
        let (theirs, ours) = slopes(result, published);
        let idle = result.at_pods(0).map(|s| s.memory);
        let idle_mib = |bytes: fn(&crate::operator::Memory) -> Option<u64>| {
            fmt_opt(idle.as_ref().and_then(bytes).map(|b| b as f64 / MIB), 1)
        };
        let _ = writeln!(out, "## Experiment {}\n", result.experiment);
        let _ = writeln!(
            out,
            "{} — {} steps in {:.1} s (KubeRay: every {} s). Idle RSS {} MiB (anonymous {} MiB, PSS {} MiB, \
             {} threads); slope KubeRay {theirs:.3} MiB/pod, ours {ours:.3} MiB/pod (anonymous {:.3}).\n",
            result.description,
            result.samples.len().saturating_sub(1),
            result.wall_ms as f64 / 1000.0,
            result.published_interval_secs,
            idle_mib(|m| Some(m.rss_bytes)),
            idle_mib(|m| m.anonymous_bytes),
            idle_mib(|m| m.pss_bytes),
            idle.and_then(|m| m.threads)
                .map_or_else(|| "-".to_owned(), |t| t.to_string()),
            anonymous_slope(result)
        );
        let _ = writeln!(
            out,
            "| pods | KubeRay MiB | ours MiB (RSS) | ratio | ours anonymous MiB | ours PSS MiB |"
        );
        let _ = writeln!(out, "| ---: | ---: | ---: | ---: | ---: | ---: |");
        for row in rows(result, published) {
            let _ = writeln!(
                out,
                "| {} | {:.2} | {} | {} | {} | {} |",
                row.pods,
                row.kuberay_mib,
                fmt_opt(row.ours_mib, 2),
                fmt_opt(row.ratio, 2),
                fmt_opt(row.ours_anonymous_mib, 2),
                fmt_opt(row.ours_pss_mib, 2)
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "![memory against pods](memory.svg)");
    out
}

/// `results.json`: every sample and every comparison row.
pub fn json(results: &[ExperimentResult], published: &Published, run: &RunSummary) -> serde_json::Value {
    let experiments: Vec<serde_json::Value> = results
        .iter()
        .map(|r| {
            let (kuberay_slope, ours_slope) = slopes(r, published);
            serde_json::json!({
                "experiment": r,
                "comparison": rows(r, published),
                "published": published.experiment(r.experiment),
                "slope_mib_per_pod": {"kuberay": kuberay_slope, "ours": ours_slope},
            })
        })
        .collect();
    serde_json::json!({
        "published_source": published.source,
        "wall_secs": run.wall_secs,
        "experiments_together": run.together,
        "kernel_reclaimed_pages": run.reclaimed_pages,
        "experiments": experiments,
    })
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The SVG plot: one panel per experiment, KubeRay (dashed) and ours (solid), MiB against pods.
pub fn svg(results: &[ExperimentResult], published: &Published) -> String {
    const PANEL_W: f64 = 320.0;
    const H: f64 = 300.0;
    const LEFT: f64 = 45.0;
    const RIGHT: f64 = 15.0;
    const TOP: f64 = 30.0;
    const BOTTOM: f64 = 40.0;
    let width = PANEL_W * results.len().max(1) as f64;
    // One y scale for every panel so they compare.
    let max_mib = results
        .iter()
        .flat_map(|r| {
            let ours = r.samples.iter().map(|s| s.memory.rss_bytes as f64 / MIB);
            let theirs = published.experiment(r.experiment).into_iter().map(|p| p.mib);
            ours.chain(theirs).collect::<Vec<_>>()
        })
        .fold(10.0_f64, f64::max);
    let y_max = (max_mib * 1.1 / 10.0).ceil() * 10.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{H}" viewBox="0 0 {width} {H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="{width}" height="{H}" fill="white"/>"#);
    for (panel, result) in results.iter().enumerate() {
        let x0 = panel as f64 * PANEL_W + LEFT;
        let (plot_w, plot_h) = (PANEL_W - LEFT - RIGHT, H - TOP - BOTTOM);
        let x_max = result
            .samples
            .iter()
            .map(|s| s.pods)
            .chain(published.experiment(result.experiment).iter().map(|p| p.pods))
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let px = |pods: f64| x0 + pods / x_max * plot_w;
        let py = |mib: f64| TOP + plot_h - mib / y_max * plot_h;
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="18" text-anchor="middle" font-weight="bold">Experiment {}</text>"#,
            x0 + plot_w / 2.0,
            result.experiment
        );
        let _ = writeln!(
            out,
            r##"<polyline points="{x0:.1},{TOP:.1} {x0:.1},{:.1} {:.1},{:.1}" fill="none" stroke="#444"/>"##,
            TOP + plot_h,
            x0 + plot_w,
            TOP + plot_h
        );
        for tick in 0..=5 {
            let mib = y_max * f64::from(tick) / 5.0;
            let pods = x_max * f64::from(tick) / 5.0;
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{mib:.0}</text>"#,
                x0 - 4.0,
                py(mib) + 4.0
            );
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{pods:.0}</text>"#,
                px(pods),
                TOP + plot_h + 14.0
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">Ray pods</text>"#,
            x0 + plot_w / 2.0,
            H - 8.0
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" transform="rotate(-90 {:.1} {:.1})" text-anchor="middle">MiB</text>"#,
            x0 - 32.0,
            TOP + plot_h / 2.0,
            x0 - 32.0,
            TOP + plot_h / 2.0
        );
        let line = |points: Vec<(f64, f64)>| {
            points
                .iter()
                .map(|(pods, mib)| format!("{:.1},{:.1}", px(*pods), py(*mib)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let theirs: Vec<(f64, f64)> = published
            .experiment(result.experiment)
            .iter()
            .map(|p: &&PublishedPoint| (p.pods as f64, p.mib))
            .collect();
        let ours: Vec<(f64, f64)> = result
            .samples
            .iter()
            .map(|s| (s.pods as f64, s.memory.rss_bytes as f64 / MIB))
            .collect();
        let _ = writeln!(
            out,
            r##"<polyline points="{}" fill="none" stroke="#d62728" stroke-width="2" stroke-dasharray="6 3"/>"##,
            line(theirs)
        );
        let _ = writeln!(
            out,
            r##"<polyline points="{}" fill="none" stroke="#1f77b4" stroke-width="2"/>"##,
            line(ours)
        );
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" fill="#d62728">{}</text>"##,
            x0 + 8.0,
            TOP + 12.0,
            escape("KubeRay v0.6.0 (published)")
        );
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" fill="#1f77b4">{}</text>"##,
            x0 + 8.0,
            TOP + 26.0,
            escape("kuberay-rs (RSS)")
        );
    }
    let _ = writeln!(out, "</svg>");
    out
}

/// Writes `report.md`, `results.json` and `memory.svg` under `dir`; returns their paths.
pub fn write_all(
    dir: &Path,
    results: &[ExperimentResult],
    published: &Published,
    run: &RunSummary,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = [
        ("report.md", markdown(results, published, run)),
        (
            "results.json",
            serde_json::to_string_pretty(&json(results, published, run))?,
        ),
        ("memory.svg", svg(results, published)),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::Memory;
    use crate::run::Sample;

    fn published() -> Published {
        let text = "experiment,pods,operator_memory_mib\n1,0,20\n1,2,22\n1,4,30\n";
        Published {
            source: PathBuf::from("fixture.csv"),
            points: crate::published::parse_csv(text).unwrap(),
        }
    }

    fn result() -> ExperimentResult {
        let samples = (0..=4)
            .map(|pods| Sample {
                step: pods,
                clusters: pods,
                pods,
                converge_ms: 10,
                at_ms: 100 * pods as u64,
                memory: Memory {
                    rss_bytes: (10 + pods as u64) * 1_048_576,
                    hwm_bytes: (11 + pods as u64) * 1_048_576,
                    metrics_rss_bytes: Some((10 + pods as u64) * 1_048_576),
                    anonymous_bytes: Some((2 + 2 * pods as u64) * 1_048_576),
                    pss_bytes: Some((8 + pods as u64) * 1_048_576),
                    threads: Some(2),
                },
            })
            .collect();
        ExperimentResult {
            experiment: 1,
            description: "fixture <1>".into(),
            published_interval_secs: 20,
            samples,
            wall_ms: 1234,
        }
    }

    #[test]
    fn rows_pair_published_points_with_our_samples() {
        let rows = rows(&result(), &published());
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].pods, 2);
        assert_eq!(rows[1].ours_mib, Some(12.0));
        assert!((rows[1].ratio.unwrap() - 12.0 / 22.0).abs() < 1e-9);
        assert_eq!(rows[2].ours_mib, Some(14.0));
        assert_eq!(rows[2].ours_anonymous_mib, Some(10.0));
        assert_eq!(rows[2].ours_pss_mib, Some(12.0));
    }

    #[test]
    fn slope_is_least_squares() {
        assert!((slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) - 2.0).abs() < 1e-12);
        assert_eq!(slope(&[(1.0, 1.0)]), 0.0);
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 2.0)]), 0.0);
        let (theirs, ours) = slopes(&result(), &published());
        assert!((ours - 1.0).abs() < 1e-9);
        assert!((theirs - 2.5).abs() < 1e-9);
        assert!((anonymous_slope(&result()) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn text_and_markdown_tables_hold_every_row() {
        let (r, p) = (result(), published());
        let text = text_table(&r, &p);
        assert!(text.contains("Experiment 1"), "{text}");
        assert!(text.contains("KubeRay MiB"));
        assert!(
            text.contains("    2         22.00      12.00    0.55       6.00      10.00"),
            "{text}"
        );
        assert!(text.contains("(anonymous 2.000)"), "{text}");
        let md = markdown(std::slice::from_ref(&r), &p, &summary(1.5));
        assert!(md.contains("| pods | KubeRay MiB | ours MiB (RSS) | ratio | ours anonymous MiB | ours PSS MiB |"));
        assert!(md.contains("| 4 | 30.00 | 14.00 | 0.47 | 10.00 | 12.00 |"), "{md}");
        assert!(
            md.contains("Idle RSS 10.0 MiB (anonymous 2.0 MiB, PSS 8.0 MiB, 2 threads)"),
            "{md}"
        );
        assert!(md.contains("memory.svg"));
    }

    fn summary(wall_secs: f64) -> RunSummary {
        RunSummary {
            wall_secs,
            together: false,
            reclaimed_pages: Some(0),
        }
    }

    #[test]
    fn reclaim_during_the_run_is_called_out() {
        assert_eq!(RunSummary::default().reclaim_note(), None);
        assert_eq!(
            summary(1.0).reclaim_note().unwrap(),
            "The kernel reclaimed no memory during the run."
        );
        let note = RunSummary {
            wall_secs: 1.0,
            together: true,
            reclaimed_pages: Some(2560),
        }
        .reclaim_note()
        .unwrap();
        assert!(
            note.starts_with("**The kernel reclaimed 2560 pages (10.0 MiB) during the run**"),
            "{note}"
        );
    }

    #[test]
    fn json_carries_samples_and_rows() {
        let value = json(&[result()], &published(), &summary(2.0));
        assert_eq!(value["wall_secs"], 2.0);
        let experiment = &value["experiments"][0];
        assert_eq!(experiment["experiment"]["samples"].as_array().unwrap().len(), 5);
        assert_eq!(experiment["experiment"]["samples"][2]["rss_bytes"], 12 * 1_048_576);
        assert_eq!(experiment["comparison"][1]["kuberay_mib"], 22.0);
        assert_eq!(experiment["published"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn svg_has_both_curves_per_panel() {
        let (r, p) = (result(), published());
        let svg = svg(&[r.clone(), r], &p);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("stroke-dasharray").count(), 2);
        assert_eq!(svg.matches("<polyline").count(), 2 * 3);
        assert_eq!(svg.matches("Experiment 1").count(), 2);
        // The ours curve has one point per sample, inside the plot.
        let ours = svg
            .lines()
            .find(|l| l.contains("#1f77b4") && l.starts_with("<polyline"))
            .unwrap();
        assert_eq!(ours.matches(',').count(), 5);
    }

    #[test]
    fn write_all_writes_three_files() {
        let dir = std::env::temp_dir().join(format!("kuberay-bench-report-{}", std::process::id()));
        let written = write_all(&dir, &[result()], &published(), &summary(1.0)).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["report.md", "results.json", "memory.svg"]);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
        assert_eq!(json["experiments"].as_array().unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
