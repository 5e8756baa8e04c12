//! The per-record fast path: a raw Node-API function bound to one producer.
//!
//! The facade concatenates a plain record's keys and values (`key value key value …`, no
//! separators: every extra piece of a V8 cons string costs when V8 flattens it) and writes
//! each one's length, in UTF-16 code units, into a `Uint32Array` shared with this side; the
//! function copies the text out of V8 once and writes the fields straight into the batch. No
//! lock, no allocation, no JSON. Used only on the JavaScript thread of the environment that
//! created it.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use loghose::producer::bindings::split_unix_seconds;
use loghose::producer::bindings::BindingAdds;
use loghose::producer::LogEncoder;
use loghose::producer::{Producer, ProducerError, SendOptions, Track};
use napi::bindgen_prelude::{FromNapiValue, Unknown};
use napi::{Env, JsValue, Result};

use crate::errors::Raised;

/// What a fields sender (see [`fields_sender`]) is bound to: the engine
/// producer, the buffer the record text is copied into, and the field lengths the facade writes
/// before each call (shared with JavaScript as a `Uint32Array` over the same memory). Used only
/// on the JavaScript thread of the environment that created it (functions and array buffers do
/// not cross isolates); owned jointly by the function and the array buffer, each releasing its
/// share when collected.
struct FieldsSender {
    producer: Arc<Producer>,
    /// The keys of a keyed sender (`Producer.sender(keys)`): the text then holds values only,
    /// one a key, and `lengths` their lengths. Empty: the text holds keys and values.
    keys: Vec<String>,
    /// The key lists the facade registered (`register(keys)`, on the producer's own sender
    /// only): a send naming one of them by its index carries values only, as a keyed sender's.
    shapes: RefCell<Vec<Box<[String]>>>,
    text: RefCell<Vec<u8>>,
    /// `2 * MAX_FAST_FIELDS` lengths in UTF-16 code units: key, value, key, value, …
    lengths: *mut u32,
}

/// Fields per record on the fast path; larger records go as JSON.
const MAX_FAST_FIELDS: usize = 256;

/// The record-text buffer a fields sender starts with (S1's larger record is about 700 bytes).
const TEXT_CAPACITY: usize = 16 << 10;

/// Key lists a producer's sender holds for the facade (`register`); past this, records of
/// other keys go with their keys in the text, as before any was registered.
pub(crate) const MAX_SHAPES: usize = 64;

impl FieldsSender {
    fn new(producer: Arc<Producer>, keys: Vec<String>) -> Self {
        let lengths = Box::into_raw(vec![0u32; 2 * MAX_FAST_FIELDS].into_boxed_slice());
        FieldsSender {
            producer,
            keys,
            shapes: RefCell::new(Vec::new()),
            text: RefCell::new(Vec::with_capacity(TEXT_CAPACITY)),
            lengths: lengths.cast(),
        }
    }

    /// The first `n` lengths the facade wrote.
    fn lengths(&self, n: usize) -> &[u32] {
        // SAFETY: `lengths` holds `2 * MAX_FAST_FIELDS` initialised u32s (callers keep `n`
        // within that) for as long as `self` lives; JavaScript writes them only between calls,
        // on this thread, so nothing changes them while this slice is read.
        unsafe { std::slice::from_raw_parts(self.lengths, n.min(2 * MAX_FAST_FIELDS)) }
    }
}

impl Drop for FieldsSender {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` as a boxed slice of this length, freed once, here.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.lengths,
                2 * MAX_FAST_FIELDS,
            ))
        });
    }
}

/// The fields sender a call of one of its functions is bound to, the call's first `N`
/// arguments (missing ones read as `undefined`) and how many were passed; None when Node-API
/// cannot say or fewer than `min` were passed.
///
/// # Safety
/// `env` and `info` are those of a call of a function made by [`fields_sender`], whose data is
/// its `FieldsSender`, alive until the function itself is collected; the reference is used
/// within the call, on its thread, for shared access only.
unsafe fn call_of<'a, const N: usize>(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
    min: usize,
) -> Option<(&'a FieldsSender, [napi::sys::napi_value; N], usize)> {
    let mut argc = N;
    let mut argv = [std::ptr::null_mut(); N];
    let mut data = std::ptr::null_mut();
    // SAFETY: `argv` has room for `argc` values (the caller's promise covers the rest).
    let status = unsafe {
        napi::sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            std::ptr::null_mut(),
            &mut data,
        )
    };
    if status != napi::sys::Status::napi_ok || data.is_null() || argc < min {
        return None;
    }
    // SAFETY: as the caller promises.
    Some((unsafe { &*data.cast::<FieldsSender>() }, argv, argc))
}

/// The per-record fast path for plain records, as a raw Node-API callback bound to one producer
/// through the function's data pointer: `send(text, count[, time[, shape[, ticket]]]) ->
/// boolean` (`time`: the log's Unix seconds, fractions its nanoseconds; default now; `ticket`:
/// the number the batch's report lists the record under, for `sendAsync`). The facade
/// concatenates the record's keys and values (`key value key value …`, no separators: every
/// extra piece of a V8 cons string costs when V8 flattens it) and writes each one's length into
/// the shared `lengths`; the fields are written straight into the batch. With `shape`, the
/// index of a key list the facade registered, the text is the values alone, one a key.
/// Returns false, queuing nothing, when the text does not split as the lengths say (which only
/// a surrogate pair spanning two pieces can cause): the facade then sends the record as JSON.
/// Errors are thrown as instances of the facade's classes ([`errors`](crate::errors)).
///
/// Raw rather than `#[napi]` because this is the per-record path: the generated glue's argument
/// conversion and borrow bookkeeping cost about as much as the engine's add.
unsafe extern "C" fn send_fields_callback(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::sys::napi_value {
    let outcome = std::panic::catch_unwind(|| {
        // SAFETY: this callback's function was made by `fields_sender`.
        let Some((sender, argv, argc)) = (unsafe { call_of::<5>(env, info, 2) }) else {
            return Err(Raised::type_error("send(text, count) takes two arguments"));
        };
        let mut count = 0u32;
        // SAFETY: a value handed to this callback, read in its scope.
        let status = unsafe { napi::sys::napi_get_value_uint32(env, argv[1], &mut count) };
        if status != napi::sys::Status::napi_ok || count as usize > MAX_FAST_FIELDS {
            return Err(Raised::type_error(format!(
                "count must be a number of fields up to {MAX_FAST_FIELDS}"
            )));
        }
        let Ok(mut buf) = sender.text.try_borrow_mut() else {
            return Err(Raised::new("LoghoseError", "send re-entered"));
        };
        // A registered key list, when a fourth argument names one. `sendAsync` passes
        // `undefined` there for a record of no list; Node-API answers `napi_number_expected`
        // for it, Deno reads it as 0, so a 0 beside a ticket is taken only if it is a number.
        let mut shape = 0u32;
        // SAFETY: as above.
        let shaped = argc >= 4
            && unsafe { napi::sys::napi_get_value_uint32(env, argv[3], &mut shape) }
                == napi::sys::Status::napi_ok
            && (argc < 5 || shape != 0 || unsafe { is_number(env, argv[3]) });
        let shapes = sender.shapes.borrow();
        let keys: &[String] = if shaped {
            match shapes.get(shape as usize) {
                Some(keys) if sender.keys.is_empty() => keys,
                _ => {
                    return Err(Raised::type_error(format!(
                        "no key list {shape} registered"
                    )))
                }
            }
        } else {
            &sender.keys
        };
        // A keyed sender's text (or a registered list's) is its values, exactly one a key.
        let keyed = !keys.is_empty();
        if keyed && count as usize != keys.len() {
            return Err(Raised::type_error(format!(
                "count must be the sender's {} keys",
                keys.len()
            )));
        }
        let lengths = sender.lengths(if keyed { count } else { 2 * count } as usize);
        // The log's time, when a third argument gives it (Unix seconds); else now. The facade
        // passes `undefined` for none, which Node-API refuses as a number and Deno reads as
        // NaN: a NaN is taken (and refused by the engine) only if it is a number.
        let mut time = f64::NAN;
        // SAFETY: as above.
        let timed = argc >= 3
            && unsafe { napi::sys::napi_get_value_double(env, argv[2], &mut time) }
                == napi::sys::Status::napi_ok
            && (!time.is_nan() || unsafe { is_number(env, argv[2]) });
        // The ticket the record's report carries, when a fifth argument gives one.
        let mut ticket = 0f64;
        // SAFETY: as above.
        let track = if argc >= 5
            && unsafe { napi::sys::napi_get_value_double(env, argv[4], &mut ticket) }
                == napi::sys::Status::napi_ok
        {
            Track::Ticket(ticket as u64)
        } else {
            Track::None
        };
        // SAFETY: as above.
        unsafe {
            with_utf8(env, argv[0], &mut buf, |text| {
                send_framed(
                    &sender.producer,
                    text,
                    lengths,
                    keys,
                    timed.then_some(time),
                    track,
                )
            })
        }?
    });
    let sent = match outcome {
        Ok(Ok(sent)) => sent,
        Ok(Err(e)) => return throw(env, e),
        Err(_) => {
            return throw(
                env,
                Raised::new(
                    "LoghoseError",
                    "internal error in send (a bug; please report it)",
                ),
            )
        }
    };
    let mut value = std::ptr::null_mut();
    // SAFETY: creating a primitive in the callback's scope.
    unsafe { napi::sys::napi_get_boolean(env, sent, &mut value) };
    value
}

/// Whether `value` is a JavaScript number (not `undefined`, which some runtimes' Node-API
/// reads as a number when asked for one).
///
/// # Safety
/// `value` must be a value of the current callback's scope.
unsafe fn is_number(env: napi::sys::napi_env, value: napi::sys::napi_value) -> bool {
    let mut kind = napi::sys::ValueType::napi_undefined;
    // SAFETY: as the caller promises.
    let status = unsafe { napi::sys::napi_typeof(env, value, &mut kind) };
    status == napi::sys::Status::napi_ok && kind == napi::sys::ValueType::napi_number
}

/// Throws `error` as an instance of its class; returns the null value a callback returns after
/// throwing.
fn throw(env: napi::sys::napi_env, error: Raised) -> napi::sys::napi_value {
    let error = error.into_js(&Env::from_raw(env));
    // SAFETY: thrown in the callback's scope, on its thread.
    unsafe { napi::JsError::from(error).throw_into(env) };
    std::ptr::null_mut()
}

/// Releases one share of a fields sender when its function or its lengths' array buffer is
/// collected (or the environment is torn down).
unsafe extern "C" fn release_fields_sender(
    _env: napi::sys::napi_env,
    _data: *mut std::ffi::c_void,
    hint: *mut std::ffi::c_void,
) {
    // SAFETY: `hint` is one of the two `Rc::into_raw` shares made in `fields_sender`, each
    // released exactly once.
    drop(unsafe { Rc::from_raw(hint.cast::<FieldsSender>().cast_const()) });
}

/// `register(keys) -> number | null`, a property of a producer's own sender: keeps a record
/// shape's key list (1 to `MAX_FAST_FIELDS` keys) and returns its index, which later sends
/// pass to carry values only; null when `MAX_SHAPES` are held or `keys` is not an array of
/// strings. The keys are checked by every send that uses them, as any key is, not here. Raw to
/// share the send function's data.
unsafe extern "C" fn register_shape_callback(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::sys::napi_value {
    let registered = std::panic::catch_unwind(|| {
        // SAFETY: this callback's function was made by `fields_sender`.
        let (sender, argv, _) = unsafe { call_of::<1>(env, info, 1) }?;
        // SAFETY: a value handed to this callback, read in its scope.
        let keys = unsafe { Vec::<String>::from_napi_value(env, argv[0]) }.ok()?;
        if keys.is_empty() || keys.len() > MAX_FAST_FIELDS || !sender.keys.is_empty() {
            return None;
        }
        let mut shapes = sender.shapes.try_borrow_mut().ok()?;
        if shapes.len() >= MAX_SHAPES {
            return None;
        }
        shapes.push(keys.into_boxed_slice());
        u32::try_from(shapes.len() - 1).ok()
    });
    let mut value = std::ptr::null_mut();
    // SAFETY: creating a primitive in the callback's scope.
    unsafe {
        match registered {
            Ok(Some(index)) => napi::sys::napi_create_uint32(env, index, &mut value),
            _ => napi::sys::napi_get_null(env, &mut value),
        }
    };
    value
}

/// Runs `f` on a JavaScript string's UTF-8 text, copied once into `buf` (asking V8 for the
/// length first would walk the string twice).
///
/// # Safety
/// `value` is a live value of `env`'s current scope.
unsafe fn with_utf8<R>(
    env: napi::sys::napi_env,
    value: napi::sys::napi_value,
    buf: &mut Vec<u8>,
    f: impl FnOnce(&str) -> R,
) -> std::result::Result<R, Raised> {
    loop {
        let capacity = buf.capacity();
        let mut written = 0usize;
        // SAFETY: V8 writes at most `capacity` bytes (text and a final NUL) into the buffer's
        // allocation and reports how many text bytes it wrote.
        let status = unsafe {
            napi::sys::napi_get_value_string_utf8(
                env,
                value,
                buf.as_mut_ptr().cast(),
                capacity,
                &mut written,
            )
        };
        if status != napi::sys::Status::napi_ok {
            return Err(Raised::type_error("the record text must be a string"));
        }
        // Node lets V8 write at most `capacity - 1` bytes and stops before a character that does
        // not fit, so a cut text leaves at most 3 of them unused: more unused means whole.
        if written + 4 < capacity {
            // SAFETY: V8 initialised the first `written` bytes, and the text is whole (see
            // above). Node converts with REPLACE_INVALID_UTF8, so it is valid UTF-8 (a lone
            // surrogate becomes U+FFFD).
            let text = unsafe {
                buf.set_len(written);
                std::str::from_utf8_unchecked(buf)
            };
            let out = f(text);
            if buf.capacity() > 1 << 20 {
                // One huge record does not keep its buffer for the producer's life.
                *buf = Vec::with_capacity(TEXT_CAPACITY);
            }
            return Ok(out);
        }
        // The text may have been cut: ask for its length and make room.
        let mut needed = 0usize;
        // SAFETY: a null buffer asks only for the length.
        unsafe {
            napi::sys::napi_get_value_string_utf8(env, value, std::ptr::null_mut(), 0, &mut needed)
        };
        // Room for the text, its NUL and the slack that shows the next call whole.
        buf.clear();
        buf.reserve(needed + 5);
    }
}

/// Splits `text` (UTF-8) into pieces of `lengths[i]` UTF-16 code units each, as JavaScript
/// measured them; None when the lengths do not add up to the text. ASCII text (the common
/// case: as many bytes as code units) splits by the lengths directly; otherwise each piece is
/// walked character by character.
fn split_by_utf16_lengths<'t, E>(
    text: &'t str,
    lengths: &[u32],
    mut on_piece: impl FnMut(usize, &'t str) -> std::result::Result<(), E>,
) -> Option<std::result::Result<(), E>> {
    let units: u64 = lengths.iter().map(|&n| u64::from(n)).sum();
    let ascii = units == text.len() as u64;
    let mut rest = text;
    for (i, &len) in lengths.iter().enumerate() {
        let len = len as usize;
        let end = if ascii {
            len
        } else {
            let mut left = len;
            let mut end = 0;
            for c in rest.chars() {
                if left == 0 {
                    break;
                }
                // A surrogate pair counts two; one split between two pieces cannot be.
                left = left.checked_sub(c.len_utf16())?;
                end += c.len_utf8();
            }
            if left != 0 {
                return None;
            }
            end
        };
        let (piece, tail) = rest.split_at_checked(end)?;
        if let Err(e) = on_piece(i, piece) {
            return Some(Err(e));
        }
        rest = tail;
    }
    rest.is_empty().then_some(Ok(()))
}

/// Queues one record framed as [`send_fields_callback`] describes (with `keys`, the text is
/// values only, one a key; `track`: how its report is told); false when the framing does not
/// hold (nothing queued, nothing counted): the facade then sends it as JSON.
fn send_framed(
    producer: &Producer,
    text: &str,
    lengths: &[u32],
    keys: &[String],
    time: Option<f64>,
    track: Track,
) -> std::result::Result<bool, Raised> {
    if lengths.is_empty() {
        return Ok(false);
    }
    let fill = |enc: &mut LogEncoder<'_>| {
        let mut key = "";
        let split = split_by_utf16_lengths(text, lengths, |i, piece| {
            if !keys.is_empty() {
                enc.field_str(&keys[i], piece)
            } else if i % 2 == 0 {
                key = piece;
                Ok(())
            } else {
                enc.field_str(key, piece)
            }
        });
        // A framing that does not hold declines: what was written is rolled back.
        split.map_or(Ok(false), |written| written.map(|()| true))
    };
    let opts = match (time, track) {
        (None, Track::None) => {
            return producer
                .try_add_in_place(fill)
                .map(|added| added.is_queued())
                .map_err(Raised::from)
        }
        (None, _) => SendOptions::default(),
        (Some(time), _) => {
            let (secs, nanos) =
                split_unix_seconds(time).map_err(|e| Raised::from(ProducerError::from(e)))?;
            SendOptions {
                time: Some(secs),
                time_ns: Some(nanos),
                ..SendOptions::default()
            }
        }
    };
    producer
        .try_send_in_place(&opts, track, fill)
        .map(|sent| sent.is_queued())
        .map_err(Raised::from)
}

/// A JavaScript function named `name` calling `callback` with `sender` as its data, which
/// the function's finaliser releases; None (the share released) when Node-API refuses.
///
/// # Safety
/// `env` is the current environment, on its thread.
unsafe fn bound_function(
    env: napi::sys::napi_env,
    name: &str,
    callback: unsafe extern "C" fn(
        napi::sys::napi_env,
        napi::sys::napi_callback_info,
    ) -> napi::sys::napi_value,
    sender: Rc<FieldsSender>,
) -> Option<napi::sys::napi_value> {
    let ok = |status| status == napi::sys::Status::napi_ok;
    let share = Rc::into_raw(sender).cast_mut();
    let mut function = std::ptr::null_mut();
    // SAFETY: the share is handed to the function's finaliser, which releases it once; if the
    // function is not made whole it is released here (the function is garbage, never called).
    unsafe {
        if ok(napi::sys::napi_create_function(
            env,
            name.as_ptr().cast(),
            name.len() as isize,
            Some(callback),
            share.cast(),
            &mut function,
        )) && ok(napi::sys::napi_add_finalizer(
            env,
            function,
            std::ptr::null_mut(),
            Some(release_fields_sender),
            share.cast(),
            std::ptr::null_mut(),
        )) {
            return Some(function);
        }
        drop(Rc::from_raw(share));
    }
    None
}

/// A JavaScript function `(text, count[, time[, shape]]) => boolean` bound to `producer`, with
/// the `Uint32Array` its field lengths go in as its `lengths` property and, without `keys`, the
/// `register(keys)` function that names a key list for `shape`. It holds the engine
/// producer itself, so a send takes no lock and is refused once the producer is closed. With
/// `keys` (checked here, as the service checks keys, once), the text is the values alone.
pub(crate) fn fields_sender(
    env: Env,
    producer: Arc<Producer>,
    keys: Vec<String>,
) -> Result<Unknown<'static>> {
    if keys.len() > MAX_FAST_FIELDS {
        return Err(Raised::type_error(format!(
            "a sender takes at most {MAX_FAST_FIELDS} keys, not {}",
            keys.len()
        ))
        .into_js(&env));
    }
    if let Err(error) = loghose::producer::bindings::check_keys(&keys, producer.config().key_policy)
    {
        return Err(Raised::from(ProducerError::from(error)).into_js(&env));
    }
    let keyed = !keys.is_empty();
    let sender = Rc::new(FieldsSender::new(producer, keys));
    let shapes_share = sender.clone();
    let lengths = sender.lengths;
    let failed = || Raised::new("LoghoseError", "could not create the send function").into_js(&env);
    let env = env.raw();
    let mut buffer = std::ptr::null_mut();
    let mut array = std::ptr::null_mut();
    let ok = |status| status == napi::sys::Status::napi_ok;
    // SAFETY: each `Rc::into_raw` share (the functions' in `bound_function`, the array
    // buffer's here) is handed to exactly one finaliser, which releases it; a share whose
    // owner was not made whole is released where it was made (that owner is garbage, never
    // called). The lengths' memory lives in the sender, so it outlives the functions and the
    // array buffer.
    unsafe {
        let Some(function) =
            bound_function(env, "sendFields", send_fields_callback, sender.clone())
        else {
            return Err(failed());
        };
        let share = Rc::into_raw(sender).cast_mut();
        if !ok(napi::sys::napi_create_external_arraybuffer(
            env,
            lengths.cast(),
            2 * MAX_FAST_FIELDS * std::mem::size_of::<u32>(),
            Some(release_fields_sender),
            share.cast(),
            &mut buffer,
        )) {
            drop(Rc::from_raw(share));
            return Err(failed());
        }
        if !ok(napi::sys::napi_create_typedarray(
            env,
            napi::sys::TypedarrayType::uint32_array,
            2 * MAX_FAST_FIELDS,
            buffer,
            0,
            &mut array,
        )) || !ok(napi::sys::napi_set_named_property(
            env,
            function,
            c"lengths".as_ptr(),
            array,
        )) {
            return Err(failed());
        }
        if keyed {
            return Ok(Unknown::from_raw_unchecked(env, function));
        }
        let Some(register) = bound_function(env, "register", register_shape_callback, shapes_share)
        else {
            return Err(failed());
        };
        if !ok(napi::sys::napi_set_named_property(
            env,
            function,
            c"register".as_ptr(),
            register,
        )) {
            return Err(failed());
        }
        Ok(Unknown::from_raw_unchecked(env, function))
    }
}

/// How many bytes V8 writes of `text` into a buffer of `capacity` bytes (text and its NUL),
/// and those bytes: the behaviour [`with_utf8`] relies on (at most `capacity - 1` bytes, never
/// part of a character), exposed so a test pins it for the Node versions we support.
#[napi_derive::napi(js_name = "utf8WriteProbe")]
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn utf8_write_probe(env: Env, text: Unknown<'_>, capacity: u32) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; capacity as usize];
    let mut written = 0usize;
    // SAFETY: V8 writes at most `capacity` bytes into `buf`, which has that many.
    let status = unsafe {
        napi::sys::napi_get_value_string_utf8(
            env.raw(),
            text.raw(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut written,
        )
    };
    if status != napi::sys::Status::napi_ok {
        return Err(Raised::type_error("text must be a string").into_js(&env));
    }
    buf.truncate(written);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::split_by_utf16_lengths;

    /// The pieces of `text` cut at JavaScript's lengths (UTF-16 units), or None.
    fn pieces(text: &str, lengths: &[u32]) -> Option<Vec<String>> {
        let mut out = Vec::new();
        split_by_utf16_lengths(text, lengths, |_, piece| {
            out.push(piece.to_owned());
            Ok::<(), ()>(())
        })?
        .ok()?;
        Some(out)
    }

    fn utf16_lengths(parts: &[&str]) -> Vec<u32> {
        parts
            .iter()
            .map(|p| p.encode_utf16().count() as u32)
            .collect()
    }

    #[test]
    fn ascii_splits_by_the_lengths() {
        assert_eq!(
            pieces("levelINFOmsghi", &[5, 4, 3, 2]),
            Some(vec![
                "level".into(),
                "INFO".into(),
                "msg".into(),
                "hi".into()
            ])
        );
        assert_eq!(
            pieces("", &[0, 0]),
            Some(vec![String::new(), String::new()])
        );
    }

    #[test]
    fn multibyte_and_astral_text_splits_by_utf16_units() {
        for parts in [
            vec!["café", "é"],
            vec!["日志", "两字节"],
            vec!["🚀", "four 🚀 bytes"],
            vec!["k", "", "🚀🚀", "x"],
        ] {
            let text: String = parts.concat();
            let expected: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
            assert_eq!(
                pieces(&text, &utf16_lengths(&parts)),
                Some(expected),
                "{parts:?}"
            );
        }
    }

    #[test]
    fn lengths_that_do_not_add_up_are_refused() {
        assert_eq!(pieces("abc", &[1, 1]), None, "text left over");
        assert_eq!(pieces("abc", &[2, 2]), None, "text too short");
        assert_eq!(pieces("日志", &[1, 2]), None, "past the end");
        // A surrogate pair cannot be split between two pieces.
        assert_eq!(pieces("🚀", &[1, 1]), None);
        assert_eq!(pieces("a🚀", &[2, 1]), None);
    }

    #[test]
    fn an_error_from_a_piece_stops_the_split() {
        let mut seen = 0;
        let result = split_by_utf16_lengths("abcd", &[1, 1, 1, 1], |i, _| {
            seen += 1;
            if i == 1 {
                Err("refused")
            } else {
                Ok(())
            }
        });
        assert_eq!(result, Some(Err("refused")));
        assert_eq!(seen, 2);
    }
}
