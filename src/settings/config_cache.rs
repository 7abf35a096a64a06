//! Settings read once per distinct settings text.
//!
//! The host sends the policy's settings with every `validate` call. Reading
//! them (unknown-key checks, quantity parsing) costs as much as a small
//! decision, and they rarely change, so the [`Config`] of the last few
//! settings texts is kept. Within one instance only; an instance that is
//! created per request (Kubewarden's policy-server) simply reads them once.

use crate::settings::{parse_settings, Config};
use std::cell::RefCell;
use std::rc::Rc;

/// More distinct settings than one policy instance normally sees.
const CAPACITY: usize = 4;
/// The text standing for absent settings.
const NO_SETTINGS: &str = "null";

thread_local! {
    /// (settings text, its config), most recently read last.
    static CONFIGS: RefCell<Vec<(String, Rc<Config>)>> = const { RefCell::new(Vec::new()) };
}

/// The config for the settings text of the `validate` payload (`None`:
/// defaults), or why they are invalid.
pub fn config_for(settings: Option<&str>) -> Result<Rc<Config>, String> {
    let text = settings.unwrap_or(NO_SETTINGS);
    let cached = CONFIGS.with_borrow(|configs| {
        configs
            .iter()
            .find(|(known, _)| same_text(known, text))
            .map(|(_, config)| Rc::clone(config))
    });
    if let Some(config) = cached {
        return Ok(config);
    }
    let config = Rc::new(parse_settings(text.as_bytes())?.config()?);
    CONFIGS.with_borrow_mut(|configs| {
        if configs.len() == CAPACITY {
            configs.remove(0);
        }
        configs.push((text.to_owned(), Rc::clone(&config)));
    });
    Ok(config)
}

/// `a == b`, eight bytes at a time. Settings texts are compared on every
/// call, and in Wasm `==` calls wasi-libc's `memcmp`, which goes one byte at
/// a time.
fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_rest, b_rest) = (a_words.remainder(), b_words.remainder());
    a_words.zip(b_words).all(|(x, y)| word(x) == word(y)) && a_rest == b_rest
}

/// Eight bytes as one number (`chunks_exact(8)` yields only eight).
fn word(bytes: &[u8]) -> u64 {
    <[u8; 8]>::try_from(bytes).map_or(0, u64::from_ne_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::QosMode;
    use rstest::rstest;

    #[rstest]
    #[case::empty("", "", true)]
    #[case::shorter_than_a_word("null", "null", true)]
    #[case::words_and_a_rest(
        "{\"qos\": {\"mode\": \"off\"}}",
        "{\"qos\": {\"mode\": \"off\"}}",
        true
    )]
    #[case::differs_in_a_word(
        "{\"qos\": {\"mode\": \"off\"}}",
        "{\"qos\": {\"mide\": \"off\"}}",
        false
    )]
    #[case::differs_in_the_rest(
        "{\"qos\": {\"mode\": \"off\"}}",
        "{\"qos\": {\"mode\": \"off\"}]",
        false
    )]
    #[case::different_lengths("null", "null ", false)]
    fn texts_compare_as_equal_strings(#[case] a: &str, #[case] b: &str, #[case] same: bool) {
        assert_eq!(same_text(a, b), same);
        assert_eq!(same_text(a, b), a == b);
    }

    #[test]
    fn the_same_text_is_read_once() {
        let settings = r#"{"qos": {"mode": "validate"}}"#;
        let first = config_for(Some(settings)).unwrap();
        let second = config_for(Some(settings)).unwrap();
        assert!(Rc::ptr_eq(&first, &second));
        assert_eq!(first.qos.mode, QosMode::Validate);
    }

    #[test]
    fn different_texts_get_their_own_config() {
        let validate = config_for(Some(r#"{"qos": {"mode": "validate"}}"#)).unwrap();
        let off = config_for(Some(r#"{"qos": {"mode": "off"}}"#)).unwrap();
        let defaults = config_for(None).unwrap();
        assert_eq!(
            (validate.qos.mode, off.qos.mode, defaults.qos.mode),
            (QosMode::Validate, QosMode::Off, Config::default().qos.mode)
        );
    }

    #[test]
    fn older_texts_are_dropped_beyond_capacity() {
        let texts: Vec<String> = (1..=CAPACITY + 1)
            .map(|weight| format!(r#"{{"topology": {{"preferredWeight": {weight}}}}}"#))
            .collect();
        let first = config_for(Some(&texts[0])).unwrap();
        for text in &texts[1..] {
            config_for(Some(text)).unwrap();
        }
        let again = config_for(Some(&texts[0])).unwrap();
        assert!(!Rc::ptr_eq(&first, &again), "evicted, so read again");
        assert_eq!(*first, *again);
    }

    #[test]
    fn invalid_settings_are_an_error_every_time() {
        let bad = r#"{"qos": {"mode": "sometimes"}}"#;
        for _ in 0..2 {
            let message = config_for(Some(bad)).unwrap_err();
            assert!(message.contains("qos.mode"), "{message}");
        }
    }
}
