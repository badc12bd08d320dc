//! "Did you mean" for names the user typed: the closest candidate by edit distance.

/// Levenshtein distance between `a` and `b` (in characters).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The candidate closest to `want`, when it is close enough to be a likely typo (at most half
/// the longer name's length away); empty candidates are skipped.
pub fn nearest_name<'a>(want: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter(|c| !c.is_empty())
        .map(|c| (distance(want, c), c))
        .filter(|(d, c)| *d <= want.len().max(c.len()) / 2)
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::nearest_name;

    #[test]
    fn finds_typos_and_ignores_strangers() {
        let names = ["lidar", "camera", "", "base_link"];
        assert_eq!(nearest_name("lidr", names), Some("lidar"));
        assert_eq!(nearest_name("camra", names), Some("camera"));
        assert_eq!(nearest_name("base-link", names), Some("base_link"));
        assert_eq!(nearest_name("wheel", names), None);
        assert_eq!(nearest_name("x", []), None);
    }
}
