//! Repeated scale rounds: how each operator setting's rate compares with the bare clients' over several
//! rounds, each ratio taken against the ceilings measured in the same round. On a shared machine the
//! simulator's speed drifts between phases by more than the effect being measured, so one pair of phases says
//! little; the median of paired rounds says more, and the lowest and highest say how far to trust it.

use serde::Serialize;

use crate::scale::{PhaseResult, ScaleRound, mib, percent_of};

/// The median, lowest and highest of a set of figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// The middle figure (the mean of the two middle ones for an even count).
    pub median: f64,
    /// The lowest figure.
    pub min: f64,
    /// The highest figure.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`, leaving out NaNs (a rate of a phase that timed nothing), or `None` when no
    /// figure is left.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        let (first, last) = (*sorted.first()?, *sorted.last()?);
        let middle = sorted.len() / 2;
        let median = if sorted.len().is_multiple_of(2) {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        } else {
            sorted[middle]
        };
        Some(Self {
            median,
            min: first,
            max: last,
        })
    }
}

impl std::fmt::Display for Spread {
    /// A spread of percentages: `78% (75-80%)`, the median, then the lowest and highest.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.0}% ({:.0}-{:.0}%)", self.median, self.min, self.max)
    }
}

/// One operator setting over every round.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SettingSpread {
    /// The setting's label (its flags).
    pub label: String,
    /// Its rate as a percentage of the pods-only bare client's in the same round.
    pub percent_of_pods_only: Spread,
    /// Its rate as a percentage of the same-objects bare client's in the same round.
    pub percent_of_same_objects: Spread,
    /// The operator's highest peak RSS in any round, MiB.
    pub highest_peak_rss_mib: Option<f64>,
}

/// The spread of each operator setting (in the order the rounds ran them) over `rounds`.
pub fn summarize(rounds: &[ScaleRound]) -> Vec<SettingSpread> {
    let settings = rounds.first().map_or(0, |round| round.operator.len());
    (0..settings)
        .filter_map(|setting| {
            let phases: Vec<(&ScaleRound, &PhaseResult)> = rounds
                .iter()
                .filter_map(|round| Some((round, round.operator.get(setting)?)))
                .collect();
            let percents = |ceiling: fn(&ScaleRound) -> &PhaseResult| {
                let values: Vec<f64> = phases
                    .iter()
                    .map(|(round, phase)| percent_of(phase, ceiling(round)))
                    .collect();
                Spread::of(&values)
            };
            Some(SettingSpread {
                label: phases.first()?.1.label.clone(),
                percent_of_pods_only: percents(|round| &round.bare)?,
                percent_of_same_objects: percents(|round| &round.bare_same_objects)?,
                highest_peak_rss_mib: phases
                    .iter()
                    .filter_map(|(_, phase)| phase.operator_peak_rss_bytes)
                    .max()
                    .map(mib),
            })
        })
        .collect()
}

/// The Markdown table of the spreads of `rounds` rounds (empty for a single round, whose table says it all).
pub fn markdown(spreads: &[SettingSpread], rounds: usize) -> String {
    if rounds < 2 || spreads.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "Over {rounds} rounds (odd rounds ran the bare clients first, even rounds the operator first; each \
         ratio is against the bare clients of its own round): median, and lowest to highest.\n\n\
         | run | % of bare client, pods only | % of bare client, same objects | highest operator peak RSS (MiB) |\n\
         |---|---|---|---|\n"
    );
    for setting in spreads {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            setting.label,
            setting.percent_of_pods_only,
            setting.percent_of_same_objects,
            setting
                .highest_peak_rss_mib
                .map_or("-".to_owned(), |mib| format!("{mib:.1}")),
        ));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_has_the_median_and_the_extremes() {
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[f64::NAN]), None);
        assert_eq!(
            Spread::of(&[7.0]),
            Some(Spread {
                median: 7.0,
                min: 7.0,
                max: 7.0
            })
        );
        assert_eq!(
            Spread::of(&[-f64::NAN, 5.0, f64::NAN, 1.0]),
            Some(Spread {
                median: 3.0,
                min: 1.0,
                max: 5.0
            })
        );
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Some(Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            })
        );
        assert_eq!(
            Spread::of(&[4.0, 1.0, 2.0, 10.0]),
            Some(Spread {
                median: 3.0,
                min: 1.0,
                max: 10.0
            })
        );
    }

    /// A phase that created 100 pods at `rate` pods/s.
    fn phase(label: &str, rate: f64, peak_mib: Option<u64>) -> PhaseResult {
        PhaseResult {
            label: label.into(),
            pods: 100,
            all_created_secs: 100.0 / rate,
            pods_per_sec: rate,
            operator_peak_rss_bytes: peak_mib.map(|mib| mib * 1_048_576),
            ..PhaseResult::default()
        }
    }

    fn round(pods_only: f64, same_objects: f64, operator: f64, peak_mib: u64) -> ScaleRound {
        ScaleRound {
            bare: phase("bare client, pods only", pods_only, None),
            bare_same_objects: phase("bare client, same objects", same_objects, None),
            operator: vec![phase("operator, unlimited (--qps=-1)", operator, Some(peak_mib))],
            operator_first: false,
        }
    }

    #[test]
    fn each_round_is_compared_with_its_own_ceilings() {
        // Round 2's machine was twice as fast for every phase: its ratios equal round 1's. Against the
        // same-objects ceiling the ratio of the medians of the rates (90 / 100 pods/s) would give 90%, not
        // the 120% of two rounds out of three.
        let rounds = [
            round(100.0, 75.0, 90.0, 20),
            round(200.0, 150.0, 180.0, 25),
            round(100.0, 100.0, 50.0, 22),
        ];
        let spreads = summarize(&rounds);
        assert_eq!(spreads.len(), 1);
        let spread = &spreads[0];
        assert_eq!(spread.label, "operator, unlimited (--qps=-1)");
        assert_eq!(
            spread.percent_of_pods_only,
            Spread {
                median: 90.0,
                min: 50.0,
                max: 90.0
            }
        );
        assert_eq!(
            spread.percent_of_same_objects,
            Spread {
                median: 120.0,
                min: 50.0,
                max: 120.0
            }
        );
        assert_eq!(spread.highest_peak_rss_mib, Some(25.0));
        let table = markdown(&spreads, rounds.len());
        assert!(
            table.contains("| operator, unlimited (--qps=-1) | 90% (50-90%) | 120% (50-120%) | 25.0 |"),
            "{table}"
        );
        assert!(table.starts_with("Over 3 rounds"), "{table}");
        assert_eq!(markdown(&spreads, 1), "", "one round needs no spread");
    }
}
