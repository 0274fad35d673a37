pub fn run(_a: &[String]) -> i32 {
    0
}
