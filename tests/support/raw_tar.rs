//! Tar layers for extraction tests, with entry names written raw so that hostile paths
//! (`..`, absolute) survive the `tar` builder's own checks. Shared by `src/oci/extract.rs`'s
//! unit tests and `tests/oci.rs`.

/// A tar of `(path, kind, data, link target)` entries.
pub fn raw_tar(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, kind, data, link) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(*kind);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        let name = path.as_bytes();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    builder.into_inner().unwrap()
}
