//! A sampler named by a game that sizes it itself: the BGM game of
//! Annamalai et al. 2024 (§4, Algorithm 4) has `n = T·B` records in `T`
//! batches of `B` per epoch, so its settings name only the sampler's `kind`
//! and the kind's other parameters, and the game fills in the size.
//!
//! Spelled as the kind alone (`sampler = "shuffle"`) or as the kind with its
//! other parameters (`sampler = { partial_shuffle = { buffer_size = 1000 } }`).
//! [`GameSampler::config`] reads it as the [`SamplerConfig`] of that kind with
//! `batch_size = B` (Poisson: `sample_rate = 1/T`, `steps_per_epoch = T`),
//! so every sampler of [`SamplerConfig`] can be named and is validated by its
//! own rules; the game decides which of them it simulates.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::value::{Error as ValueError, MapDeserializer};
use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::plan::invalid;
use super::{Sampler, SamplerConfig};
use crate::DataError;

/// A sampler `kind` of [`SamplerConfig`] with its parameters other than the
/// batch size and rate, which the game supplies ([`GameSampler::config`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameSampler {
    kind: String,
    params: BTreeMap<String, u64>,
}

impl GameSampler {
    /// The sampler `kind` (a [`SamplerConfig`] kind, e.g. `"shuffle"`)
    /// without parameters.
    pub fn new(kind: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            params: BTreeMap::new(),
        }
    }

    /// The same sampler with the integer parameter `name` (e.g.
    /// `buffer_size`).
    pub fn with(mut self, name: impl Into<String>, value: usize) -> Self {
        self.params.insert(name.into(), value as u64);
        self
    }

    /// The sampler's `kind`, as written.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The [`SamplerConfig`] of this kind for `steps` batches of `batch_size`
    /// records per epoch: `batch_size` set for the fixed-size samplers,
    /// `sample_rate = 1/steps` and `steps_per_epoch = steps` for Poisson
    /// (the one kind sized by a rate). An unknown kind or parameter is
    /// refused with the kinds and fields that exist.
    pub fn config(&self, steps: usize, batch_size: usize) -> Result<SamplerConfig, DataError> {
        let mut entries: Vec<(&str, Scalar<'_>)> = vec![("kind", Scalar::Str(&self.kind))];
        if self.kind == "poisson" {
            entries.push(("sample_rate", Scalar::F64(1.0 / steps as f64)));
            entries.push(("steps_per_epoch", Scalar::U64(steps as u64)));
        } else {
            entries.push(("batch_size", Scalar::U64(batch_size as u64)));
        }
        entries.extend(
            self.params
                .iter()
                .map(|(k, &v)| (k.as_str(), Scalar::U64(v))),
        );
        SamplerConfig::deserialize(MapDeserializer::<_, ValueError>::new(entries.into_iter()))
            .map_err(|e| invalid("sampler", self, e))
    }

    /// The validated [`Sampler`] over `n = steps · batch_size` records
    /// ([`GameSampler::config`]).
    pub fn build(&self, steps: usize, batch_size: usize) -> Result<Sampler, DataError> {
        let records = steps.checked_mul(batch_size).ok_or_else(|| {
            invalid(
                "steps",
                steps,
                format!("steps × batch_size ({batch_size}) below 2^64 records"),
            )
        })?;
        self.config(steps, batch_size)?.build(records)
    }
}

/// `shuffle`, or `partial_shuffle { buffer_size = 1000 }`.
impl fmt::Display for GameSampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind)?;
        if !self.params.is_empty() {
            let params: Vec<String> = self
                .params
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            write!(f, " {{ {} }}", params.join(", "))?;
        }
        Ok(())
    }
}

impl Serialize for GameSampler {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.params.is_empty() {
            return serializer.serialize_str(&self.kind);
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(&self.kind, &self.params)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for GameSampler {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Spelling;
        impl<'de> Visitor<'de> for Spelling {
            type Value = GameSampler;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a sampler kind (\"shuffle\") or a kind with its parameters \
                     ({ partial_shuffle = { buffer_size = 1000 } })",
                )
            }
            fn visit_str<E: de::Error>(self, kind: &str) -> Result<GameSampler, E> {
                Ok(GameSampler::new(kind))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<GameSampler, A::Error> {
                let Some((kind, params)) = map.next_entry::<String, BTreeMap<String, u64>>()?
                else {
                    return Err(de::Error::invalid_length(0, &self));
                };
                if map.next_key::<String>()?.is_some() {
                    return Err(de::Error::invalid_length(2, &self));
                }
                Ok(GameSampler { kind, params })
            }
        }
        deserializer.deserialize_any(Spelling)
    }
}

/// One value of the map [`GameSampler::config`] reads a [`SamplerConfig`] from.
#[derive(Clone, Copy)]
enum Scalar<'a> {
    Str(&'a str),
    U64(u64),
    F64(f64),
}

impl<'de> IntoDeserializer<'de, ValueError> for Scalar<'_> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for Scalar<'_> {
    type Error = ValueError;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self {
            Scalar::Str(s) => visitor.visit_str(s),
            Scalar::U64(v) => visitor.visit_u64(v),
            Scalar::F64(v) => visitor.visit_f64(v),
        }
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::BatchSampler;

    #[test]
    fn every_kind_is_sized_by_the_game() {
        let s = GameSampler::new("shuffle").build(10, 4).unwrap();
        assert!(matches!(s, Sampler::Shuffle(_)));
        assert_eq!((s.num_records(), s.batch_size()), (40, Some(4)));
        let p = GameSampler::new("poisson").build(10, 4).unwrap();
        assert_eq!(p.sample_rate(), Some(0.1));
        assert_eq!(p.steps_per_epoch(), 10);
        let k = GameSampler::new("partial_shuffle").with("buffer_size", 8);
        match k.build(10, 4).unwrap() {
            Sampler::PartialShuffle(s) => assert_eq!(s.buffer_size(), 8),
            other => panic!("{other:?}"),
        }
        let b = GameSampler::new("batch_then_shuffle").build(10, 4).unwrap();
        assert!(matches!(b, Sampler::BatchThenShuffle(_)));
        let f = GameSampler::new("fixed_sequence").build(10, 4).unwrap();
        assert!(matches!(f, Sampler::FixedSequence(_)));
    }

    #[test]
    fn bad_kinds_and_parameters_are_refused_by_name() {
        let err = GameSampler::new("shufle")
            .build(10, 4)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("shufle") && err.contains("partial_shuffle"),
            "{err}"
        );
        let err = GameSampler::new("partial_shuffle")
            .build(10, 4)
            .unwrap_err()
            .to_string();
        assert!(err.contains("buffer_size"), "{err}");
        let err = GameSampler::new("partial_shuffle")
            .with("buffer_size", 6)
            .build(10, 4)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("buffer_size") && err.contains("multiple of batch_size = 4"),
            "{err}"
        );
        let err = GameSampler::new("shuffle")
            .with("buffer", 8)
            .build(10, 4)
            .unwrap_err()
            .to_string();
        assert!(err.contains("buffer"), "{err}");
    }

    #[test]
    fn spelling_round_trips() {
        #[derive(Deserialize, Serialize)]
        struct S {
            sampler: GameSampler,
        }
        let s: S = toml::from_str("sampler = { partial_shuffle = { buffer_size = 10 } }").unwrap();
        assert_eq!(
            s.sampler,
            GameSampler::new("partial_shuffle").with("buffer_size", 10)
        );
        assert_eq!(
            s.sampler.to_string(),
            "partial_shuffle { buffer_size = 10 }"
        );
        let t: S = toml::from_str("sampler = \"shuffle\"").unwrap();
        assert_eq!(t.sampler, GameSampler::new("shuffle"));
        assert_eq!(toml::to_string(&t).unwrap(), "sampler = \"shuffle\"\n");
        assert!(toml::from_str::<S>("sampler = { a = {}, b = {} }").is_err());
    }
}
