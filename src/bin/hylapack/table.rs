//! A plain text table, printed with aligned columns, optionally also written as CSV.

pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// The column widths rows are printed at as they come ([`Table::print_header`]).
    widths: Vec<usize>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            widths: Vec::new(),
        }
    }

    /// Prints the header now, each column at least as wide as `widths` says (or its title),
    /// for rows printed as they come ([`Table::print_row`]): a run cut short keeps what it
    /// measured.
    pub fn print_header(&mut self, widths: &[usize]) {
        assert_eq!(widths.len(), self.header.len(), "one width per column");
        self.widths = self
            .header
            .iter()
            .zip(widths)
            .map(|(h, &w)| w.max(h.len()))
            .collect();
        self.print_line(&self.header);
        let rule: Vec<String> = self.widths.iter().map(|w| "-".repeat(*w)).collect();
        println!("{}", rule.join("  "));
    }

    /// Adds a row and prints it at once, at the header's widths (a longer cell pushes the
    /// rest of its line right), flushed.
    pub fn print_row(&mut self, cells: Vec<String>) {
        self.row(cells);
        self.print_line(&self.rows[self.rows.len() - 1]);
        use std::io::Write;
        let _ = std::io::stdout().flush();
    }

    fn print_line(&self, cells: &[String]) {
        let padded: Vec<String> = cells
            .iter()
            .zip(&self.widths)
            .map(|(s, w)| format!("{s:>w$}"))
            .collect();
        println!("{}", padded.join("  "));
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(
            cells.len(),
            self.header.len(),
            "a row must have one cell per column"
        );
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
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(s, w)| format!("{s:>w$}"))
                .collect();
            println!("{}", padded.join("  "));
        };
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
        let mut text = self.header.join(",") + "\n";
        for r in &self.rows {
            text += &(r.join(",") + "\n");
        }
        std::fs::write(path, text)
    }
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
