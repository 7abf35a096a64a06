//! The readers serde calls for settings values that are written more than
//! one way: words from a fixed list (reported at the value when not in
//! it), `off` also read from YAML 1.1's boolean `false`, and any value read
//! whole before it is checked, with the error still raised where serde_json
//! stands so that `key_path` names the key. Split from `mod.rs` so each
//! file stays short (issue #36).

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::str::FromStr;

/// The word of a setting whose words include `off` (`qos.mode`,
/// `topology.affinity`), also read from the boolean `false`. kubectl reads
/// manifests as YAML 1.1 (sigs.k8s.io/yaml, its goyaml.v2 `resolve.go`), where
/// an unquoted `off` is the boolean false: `affinity: off` in a
/// ClusterAdmissionPolicy reaches the policy as `"affinity": false`. Refusing
/// it would stop the policy-server over a value that means what it says.
pub(super) fn off_word<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    then(deserializer, |value| {
        let value = match value {
            serde_json::Value::Bool(false) => serde_json::Value::from(OFF),
            other => other,
        };
        T::deserialize(value).map_err(|error| error.to_string())
    })
}

/// The word `off` of [`QosMode::Off`](super::QosMode::Off) and
/// [`AffinityMode::Off`](super::AffinityMode::Off).
pub(super) const OFF: &str = "off";

/// A setting spelled as one word from a fixed list.
pub trait Word: FromStr<Err = ()> {
    /// The accepted words, for the error message.
    const EXPECTED: &'static str;
}

pub(super) fn word<'de, D: Deserializer<'de>, T: Word>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_string(WordVisitor::<T>(std::marker::PhantomData))
}

pub(super) fn optional_word<'de, D: Deserializer<'de>, T: Word>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    deserializer.deserialize_option(WordVisitor::<Option<T>>(std::marker::PhantomData))
}

/// Reads a [`Word`] in serde_json's call, so that a word not in the list
/// is reported at the value (see [`then`]). Also reads `null` as no word,
/// for [`optional_word`].
struct WordVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Word> Visitor<'de> for WordVisitor<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        text.parse()
            .map_err(|()| E::custom(format!("{text:?} is not valid: expected {}", T::EXPECTED)))
    }
}

impl<'de, T: Word> Visitor<'de> for WordVisitor<Option<T>> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        word(deserializer).map(Some)
    }
}

/// Reads any JSON value and answers `read` of it, raising `read`'s error
/// while serde_json reads the value. An error raised after the value was
/// read whole (from a `Value` deserialized first) would carry the position
/// of the end of the object around it, where `key_path` would name that
/// object instead of the key.
pub(super) fn then<'de, D, T>(
    deserializer: D,
    read: impl FnOnce(serde_json::Value) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let mut read = Some(read);
    let mut answer = None;
    deserializer.deserialize_any(Then(&mut |value| {
        if let Some(read) = read.take() {
            answer = Some(read(value)?);
        }
        Ok(())
    }))?;
    answer.ok_or_else(|| de::Error::custom("the value was not read"))
}

/// The visitor of [`then`]: builds the value as `serde_json::Value`'s own
/// visitor does (the elements and members through `Value`'s reader), and
/// hands it on. Not generic in what it answers, so that serde_json's
/// reader is instantiated for it once.
struct Then<'a>(&'a mut dyn FnMut(serde_json::Value) -> Result<(), String>);

impl Then<'_> {
    fn read<E: de::Error>(self, value: serde_json::Value) -> Result<(), E> {
        (self.0)(value).map_err(E::custom)
    }
}

impl<'de> Visitor<'de> for Then<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.read(serde_json::Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.read(serde_json::Value::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.read(serde_json::Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        self.read(serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, Into::into))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        self.read(serde_json::Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<(), E> {
        self.read(serde_json::Value::String(value))
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.read(serde_json::Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.read(serde_json::Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        self.read(value)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut elements: A) -> Result<(), A::Error> {
        let mut array = Vec::new();
        while let Some(element) = elements.next_element()? {
            array.push(element);
        }
        self.read(serde_json::Value::Array(array))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        let mut object = serde_json::Map::new();
        while let Some((key, value)) = members.next_entry()? {
            object.insert(key, value);
        }
        self.read(serde_json::Value::Object(object))
    }
}
