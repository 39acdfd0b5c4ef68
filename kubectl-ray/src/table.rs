//! Tables as kubectl prints them: upper-case headers, cells aligned by Go's `text/tabwriter` with kubectl's
//! settings (a column is as wide as its widest cell plus 3 spaces, at least 6), the last column unpadded, and
//! nothing at all, not even the header, when there are no rows.

/// kubectl's tabwriter minimum cell width (padding included).
const MIN_WIDTH: usize = 6;
/// kubectl's tabwriter padding after the widest cell of a column.
const PADDING: usize = 3;

/// A table: headers and rows of cells, each row as long as the headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers (printed in upper case).
    pub fn new<S: AsRef<str>>(headers: &[S]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.as_ref().to_uppercase()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (one cell per header).
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The rendered table; empty when there are no rows.
    pub fn render(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let lines: Vec<&Vec<String>> = std::iter::once(&self.headers).chain(&self.rows).collect();
        let columns = self.headers.len();
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                let widest = lines
                    .iter()
                    .map(|l| l.get(c).map_or(0, |cell| cell.chars().count()))
                    .max()
                    .unwrap_or(0);
                (widest + PADDING).max(MIN_WIDTH)
            })
            .collect();
        let mut out = String::new();
        for line in lines {
            for (c, cell) in line.iter().enumerate() {
                if c + 1 == line.len() {
                    out.push_str(cell);
                } else {
                    out.push_str(cell);
                    let pad = widths[c].saturating_sub(cell.chars().count());
                    out.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_the_widest_cell_plus_three_and_the_last_is_not() {
        let mut t = Table::new(&["name", "cpus", "age"]);
        t.push(vec!["raycluster-kuberay".into(), "2".into(), "5s".into()]);
        t.push(vec!["a".into(), "100".into(), "3m20s".into()]);
        assert_eq!(
            t.render(),
            "NAME                 CPUS   AGE\n\
             raycluster-kuberay   2      5s\n\
             a                    100    3m20s\n"
        );
    }

    #[test]
    fn an_empty_table_prints_nothing() {
        assert_eq!(Table::new(&["name"]).render(), "");
    }
}
