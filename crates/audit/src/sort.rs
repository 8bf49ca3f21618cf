//! Sorting f64 scores fast: an LSD radix sort on order-preserving u64 keys
//! (16-bit digits, passes whose digit is constant are skipped). Used for the
//! threshold sweep, where sorting dominates the run time on 10⁸ scores.

/// Order-preserving key: for finite floats, `a < b ⇔ key(a) < key(b)`;
/// −0.0 and 0.0 map to the same key.
fn key(x: f64) -> u64 {
    let bits = (x + 0.0).to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn from_key(k: u64) -> f64 {
    let bits = if k >> 63 == 1 { k & !(1 << 63) } else { !k };
    f64::from_bits(bits)
}

/// Sorts finite scores ascending (−0.0 becomes 0.0).
pub(crate) fn sort_scores(v: Vec<f64>) -> Vec<f64> {
    if v.len() < 1 << 16 {
        let mut v: Vec<f64> = v.into_iter().map(|x| x + 0.0).collect();
        v.sort_unstable_by(f64::total_cmp);
        return v;
    }
    let mut keys: Vec<u64> = v.into_iter().map(key).collect();
    let mut scratch = vec![0_u64; keys.len()];
    for pass in 0..4 {
        let shift = 16 * pass;
        let mut counts = vec![0_usize; 1 << 16];
        for &k in &keys {
            counts[((k >> shift) & 0xffff) as usize] += 1;
        }
        if counts.contains(&keys.len()) {
            continue;
        }
        let mut offsets = vec![0_usize; 1 << 16];
        let mut sum = 0;
        for (o, &c) in offsets.iter_mut().zip(&counts) {
            *o = sum;
            sum += c;
        }
        for &k in &keys {
            let d = ((k >> shift) & 0xffff) as usize;
            scratch[offsets[d]] = k;
            offsets[d] += 1;
        }
        std::mem::swap(&mut keys, &mut scratch);
    }
    drop(scratch);
    keys.into_iter().map(from_key).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn radix_matches_comparison_sort() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut v: Vec<f64> = (0..200_000)
            .map(|_| (rng.gen::<f64>() - 0.5) * 1e3)
            .collect();
        v.extend([0.0, -0.0, f64::MAX, f64::MIN, 1e-310, -1e-310, 3.0, 3.0]);
        let mut expected = v.clone();
        expected.iter_mut().for_each(|x| *x += 0.0);
        expected.sort_unstable_by(f64::total_cmp);
        assert_eq!(sort_scores(v), expected);
        for x in [-2.5, -0.0, 0.0, 1e-300, 7.0] {
            assert_eq!(from_key(key(x)), x + 0.0);
        }
    }
}
