//! A plain text table, printed with aligned columns, optionally also written as CSV.

pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Each row is also printed (and flushed) as it is added, padded to these widths.
    live: Option<Vec<usize>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            live: None,
        }
    }

    /// Prints the header now and every row as it is added, each cell padded to at least
    /// `min_width` (so that a long run shows its results as they are measured).
    pub fn live(mut self, min_width: usize) -> Self {
        let widths: Vec<usize> = self.header.iter().map(|h| h.len().max(min_width)).collect();
        print_line(&self.header, &widths);
        self.live = Some(widths);
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(
            cells.len(),
            self.header.len(),
            "a row must have one cell per column"
        );
        if let Some(widths) = &self.live {
            print_line(&cells, widths);
        }
        self.rows.push(cells);
    }

    pub fn print(&self) {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].len())
                    .chain([self.header[c].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| print_line(cells, &widths);
        line(&self.header);
        println!(
            "{}",
            widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("  ")
        );
        for r in &self.rows {
            line(r);
        }
    }

    pub fn write_csv(&self, path: &str) -> std::io::Result<()> {
        let line = |cells: &[String]| {
            let quoted: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
            quoted.join(",") + "\n"
        };
        let mut text = line(&self.header);
        for r in &self.rows {
            text += &line(r);
        }
        std::fs::write(path, text)
    }
}

/// A CSV cell (RFC 4180): quoted, with its quotes doubled, when it holds a comma, a quote or
/// a line break (notes such as "panels: 126 CholeskyQR2, 1 xGEQRF" do).
fn csv_cell(cell: &str) -> String {
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_string()
    }
}

/// One line of cells, right-aligned to `widths`, flushed at once.
fn print_line(cells: &[String], widths: &[usize]) {
    use std::io::Write;
    let padded: Vec<String> = cells
        .iter()
        .zip(widths)
        .map(|(s, w)| format!("{s:>w$}"))
        .collect();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", padded.join("  "));
    let _ = out.flush();
}

/// Seconds in a short human unit.
pub fn time(seconds: f64) -> String {
    if seconds < 1e-3 {
        format!("{:.1} us", seconds * 1e6)
    } else if seconds < 1.0 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{seconds:.2} s")
    }
}

/// Wall times of `reps` runs of `f`, in seconds, sorted (so `[0]` is the best, `[len / 2]` the
/// median).
pub fn timings(reps: usize, mut f: impl FnMut()) -> Vec<f64> {
    let mut t: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let s = std::time::Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t
}

#[cfg(test)]
mod tests {
    use super::csv_cell;

    #[test]
    fn csv_cells_with_commas_and_quotes_are_quoted() {
        assert_eq!(csv_cell("12.5 ms"), "12.5 ms");
        assert_eq!(csv_cell("a, b"), "\"a, b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
