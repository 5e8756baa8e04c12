//! Exposes pyo3's interpreter cfgs (`Py_3_14`, `PyPy`, `Py_LIMITED_API`, …) to this crate, so
//! that the inline `str` reads are compiled only where CPython's layout allows them.

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
