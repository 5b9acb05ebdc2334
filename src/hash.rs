//! `status.versionHash`: upstream `ManifestHash`, FNV-1 (not FNV-1a) 64-bit over the raw bytes
//! of the included manifests in load order, encoded as URL-safe base64 with padding.

use base64::Engine as _;

use crate::manifest::Manifest;

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// Hand-written: the FNV crates on crates.io implement FNV-1a only, and upstream uses FNV-1.
pub fn fnv1_64<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    let mut hash = OFFSET_BASIS;
    for chunk in chunks {
        for &byte in chunk {
            hash = hash.wrapping_mul(PRIME) ^ u64::from(byte);
        }
    }
    hash
}

/// The version hash of a list of manifests.
pub fn version_hash<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> String {
    let hash = fnv1_64(manifests.into_iter().map(|m| &*m.raw));
    base64::engine::general_purpose::URL_SAFE.encode(hash.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1_reference_values() {
        // FNV-1 64 of "" is the offset basis; of "a" is 0xaf63bd4c8601b7be (published vectors).
        assert_eq!(fnv1_64([b"".as_slice()]), OFFSET_BASIS);
        assert_eq!(fnv1_64([b"a".as_slice()]), 0xaf63_bd4c_8601_b7be);
        assert_eq!(
            fnv1_64([b"foo".as_slice()]),
            fnv1_64([b"f".as_slice(), b"oo".as_slice()])
        );
    }
}
