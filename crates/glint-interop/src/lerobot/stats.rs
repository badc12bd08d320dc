//! LeRobot's feature statistics: per dimension (or per image channel) `min`, `max`, `mean`,
//! `std` (population), `count` and the quantiles `q01 q10 q50 q90 q99`, per episode (in
//! `meta/episodes/…`) and over the dataset (`meta/stats.json`), aggregated across episodes
//! as LeRobot's `aggregate_stats` does: extremes of the extremes, the count-weighted mean, the
//! pooled variance and count-weighted quantiles.

use serde_json::{Value, json};

/// The quantiles LeRobot keeps, by name.
pub(crate) const QUANTILES: [(&str, f64); 5] =
    [("q01", 0.01), ("q10", 0.10), ("q50", 0.50), ("q90", 0.90), ("q99", 0.99)];

/// One feature's statistics: one entry per dimension (a vector) or channel (an image).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Stats {
    pub(crate) min: Vec<f64>,
    pub(crate) max: Vec<f64>,
    pub(crate) mean: Vec<f64>,
    pub(crate) std: Vec<f64>,
    /// One per quantile of [`QUANTILES`], each one per dimension.
    pub(crate) quantiles: [Vec<f64>; 5],
    /// Frames the statistics are over.
    pub(crate) count: i64,
    /// Whether the feature is an image: its entries are per channel, nested `[[x]]` as LeRobot
    /// keeps them (channel, 1, 1).
    pub(crate) image: bool,
}

/// The `q`-quantile of sorted `values`, interpolated linearly (numpy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let at = q * (sorted.len() - 1) as f64;
    let (lo, frac) = (at.floor() as usize, at - at.floor());
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

impl Stats {
    /// The statistics of `columns` (one list of values per dimension or channel) over `count`
    /// frames.
    pub(crate) fn of_columns(columns: impl Iterator<Item = Vec<f64>>, count: usize, image: bool) -> Stats {
        let mut s = Stats { count: count as i64, image, ..Stats::default() };
        for mut column in columns {
            if column.is_empty() {
                column.push(0.0);
            }
            column.sort_by(f64::total_cmp);
            let n = column.len() as f64;
            let mean = column.iter().sum::<f64>() / n;
            let var = column.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            s.min.push(column[0]);
            s.max.push(column[column.len() - 1]);
            s.mean.push(mean);
            s.std.push(var.sqrt());
            for (k, (_, q)) in QUANTILES.iter().enumerate() {
                s.quantiles[k].push(quantile(&column, *q));
            }
        }
        s
    }

    /// The statistics of `rows` frames of `width` values each (row-major), one column at a
    /// time (no copy of the whole table).
    pub(crate) fn of_rows<T: Copy + Into<f64>>(values: &[T], width: usize) -> Stats {
        let rows = values.len().checked_div(width).unwrap_or(0);
        let columns = (0..width).map(|j| (0..rows).map(|r| values[r * width + j].into()).collect());
        Stats::of_columns(columns, rows, false)
    }

    /// Every episode's statistics as one, as LeRobot aggregates them.
    pub(crate) fn aggregate(all: &[&Stats]) -> Stats {
        let Some(first) = all.first() else { return Stats::default() };
        let total: f64 = all.iter().map(|s| s.count as f64).sum::<f64>().max(1.0);
        let dims = first.mean.len();
        let weighted = |pick: &dyn Fn(&Stats) -> &Vec<f64>, j: usize| {
            all.iter().map(|s| pick(s)[j] * s.count as f64).sum::<f64>() / total
        };
        let mut out = Stats { count: total as i64, image: first.image, ..Stats::default() };
        for j in 0..dims {
            let mean = weighted(&|s| &s.mean, j);
            let var = all
                .iter()
                .map(|s| (s.std[j] * s.std[j] + (s.mean[j] - mean) * (s.mean[j] - mean)) * s.count as f64)
                .sum::<f64>()
                / total;
            out.min.push(all.iter().map(|s| s.min[j]).fold(f64::INFINITY, f64::min));
            out.max.push(all.iter().map(|s| s.max[j]).fold(f64::NEG_INFINITY, f64::max));
            out.mean.push(mean);
            out.std.push(var.sqrt());
            for k in 0..QUANTILES.len() {
                out.quantiles[k].push(weighted(&|s| &s.quantiles[k], j));
            }
        }
        out
    }

    /// The statistics' named entries, in LeRobot's order: `min max mean std count q01 … q99`.
    pub(crate) fn entries(&self) -> Vec<(&'static str, &[f64])> {
        let mut out: Vec<(&'static str, &[f64])> =
            vec![("min", &self.min), ("max", &self.max), ("mean", &self.mean), ("std", &self.std)];
        out.extend(QUANTILES.iter().zip(&self.quantiles).map(|((name, _), v)| (*name, v.as_slice())));
        out
    }

    /// As `meta/stats.json` holds a feature's statistics.
    pub(crate) fn to_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        for (name, values) in self.entries() {
            let value = if self.image {
                Value::from(values.iter().map(|v| json!([[v]])).collect::<Vec<_>>())
            } else {
                json!(values)
            };
            map.insert(name.to_string(), value);
        }
        map.insert("count".into(), json!([self.count]));
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_match_numpy() {
        // numpy: np.quantile([0, 1, 2, 3, 4], [.01, .1, .5, .9, .99]) and np.std.
        let s = Stats::of_rows(&[0.0, 10.0, 1.0, 10.0, 2.0, 10.0, 3.0, 10.0, 4.0, 10.0], 2);
        assert_eq!((s.min.clone(), s.max.clone(), s.mean.clone()), (vec![0.0, 10.0], vec![4.0, 10.0], vec![2.0, 10.0]));
        assert!((s.std[0] - 2f64.sqrt()).abs() < 1e-12 && s.std[1] == 0.0);
        let q: Vec<f64> = s.quantiles.iter().map(|q| q[0]).collect();
        for (got, want) in q.iter().zip([0.04, 0.4, 2.0, 3.6, 3.96]) {
            assert!((got - want).abs() < 1e-12, "{q:?}");
        }
        assert_eq!(s.count, 5);
    }

    #[test]
    fn aggregation_pools_the_variance() {
        let a = Stats::of_rows(&[0.0, 1.0, 2.0], 1);
        let b = Stats::of_rows(&[3.0, 4.0, 5.0, 6.0], 1);
        let all = Stats::of_rows(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 1);
        let agg = Stats::aggregate(&[&a, &b]);
        assert_eq!((agg.min[0], agg.max[0], agg.count), (0.0, 6.0, 7));
        assert!((agg.mean[0] - all.mean[0]).abs() < 1e-12);
        assert!((agg.std[0] - all.std[0]).abs() < 1e-12);
    }

    #[test]
    fn image_stats_nest_per_channel() {
        let s = Stats::of_columns([vec![0.0, 1.0], vec![0.5, 0.5]].into_iter(), 2, true);
        let j = s.to_json();
        assert_eq!(j["mean"], json!([[[0.5]], [[0.5]]]));
        assert_eq!(j["count"], json!([2]));
    }
}
