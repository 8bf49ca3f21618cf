use dpaudit_accounting::{dpsgd_epsilon, Accountant};
fn main() {
    let t = std::time::Instant::now();
    for _ in 0..5 {
        let e = dpsgd_epsilon(0.01, 0.9, 100, 1e-5, Accountant::Pld).unwrap();
        println!("{:?} {:.3}", e.numerical, t.elapsed().as_secs_f64());
    }
}
