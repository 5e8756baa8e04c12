//! Field values that are not text, written as text the same way in every front.
//!
//! Python and Node hand the producer numbers; the service stores only text. Both fronts write
//! integers as their decimal digits and floats as Python's `repr` does (the shortest text that
//! reads back as the same float): `0.1`, `1.5`, `1e+21`, `1e-05`, `100.0`, and `nan`, `inf`,
//! `-inf`, `-0.0`. A JavaScript number that is an integer below 2^64 in magnitude is written as
//! an integer (JavaScript has no separate integer type); any other number as a float. Pure
//! functions, any thread.

/// A float as Python's `repr` writes it.
pub fn float_text(value: f64) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .into();
    }
    // Rust's `{:e}` gives the shortest digits that read back as `value`: `-1.2345e-7`.
    let shortest = format!("{value:e}");
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    // The value is 0.DIGITS × 10^point.
    let point = exponent + 1;
    if !(-4 < point && point <= 16) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{sign}{first}{fraction}e{exp_sign}{:02}",
            exponent.unsigned_abs()
        );
    }
    let text = if exponent < 0 {
        // Below one: 0.000DIGITS, with -point zeros.
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else {
        let point = point as usize;
        let n = digits.len();
        if n <= point {
            format!("{digits}{}.0", "0".repeat(point - n))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    format!("{sign}{text}")
}

#[cfg(test)]
mod tests {
    use super::float_text;

    #[test]
    fn floats_read_as_python_writes_them() {
        let cases: [(f64, &str); 22] = [
            (0.1, "0.1"),
            (1.5, "1.5"),
            (-1.5, "-1.5"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e21, "1e+21"),
            (1.2345e-7, "1.2345e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.00012, "0.00012"),
            (123.456, "123.456"),
            // Exactly 2^60 (under Miri, `powi` is deliberately inexact).
            ((1u64 << 60) as f64, "1.152921504606847e+18"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
        ];
        for (value, text) in cases {
            assert_eq!(float_text(value), text, "{value:e}");
        }
    }
}
