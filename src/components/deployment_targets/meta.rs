//! The small metadata edits every reconcile makes: finalizers, annotations, labels. Each edit
//! says whether it changed anything, because a reconcile writes only what changed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub fn has_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    (meta.finalizers.iter().flatten()).any(|f| f == finalizer)
}

/// Appends `finalizer` unless present; true when it was added.
pub fn add_finalizer(meta: &mut ObjectMeta, finalizer: &str) -> bool {
    if has_finalizer(meta, finalizer) {
        return false;
    }
    (meta.finalizers.get_or_insert_with(Vec::new)).push(finalizer.to_owned());
    true
}

/// Removes `finalizer`; true when it was there. No finalizer left reads as none (`omitempty`).
pub fn remove_finalizer(meta: &mut ObjectMeta, finalizer: &str) -> bool {
    let Some(finalizers) = meta.finalizers.as_mut() else {
        return false;
    };
    let before = finalizers.len();
    finalizers.retain(|f| f != finalizer);
    let removed = finalizers.len() != before;
    if finalizers.is_empty() {
        meta.finalizers = None;
    }
    removed
}

pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    (meta.annotations.as_ref()?.get(key)).map(String::as_str)
}

/// Sets an annotation; true when that changed it.
pub fn set_annotation(meta: &mut ObjectMeta, key: &str, value: &str) -> bool {
    let annotations = meta.annotations.get_or_insert_with(Default::default);
    let previous = annotations.insert(key.to_owned(), value.to_owned());
    previous.as_deref() != Some(value)
}

/// Removes an annotation; true when it was there.
pub fn remove_annotation(meta: &mut ObjectMeta, key: &str) -> bool {
    let removed = (meta.annotations.as_mut()).is_some_and(|a| a.remove(key).is_some());
    if meta.annotations.as_ref().is_some_and(|a| a.is_empty()) {
        meta.annotations = None;
    }
    removed
}

pub fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    (meta.labels.as_ref()?.get(key)).map(String::as_str)
}

/// Sets a label; true when that changed it.
pub fn set_label(meta: &mut ObjectMeta, key: &str, value: &str) -> bool {
    let labels = meta.labels.get_or_insert_with(Default::default);
    let previous = labels.insert(key.to_owned(), value.to_owned());
    previous.as_deref() != Some(value)
}

/// Whether the object is being deleted (has a `deletionTimestamp`).
pub fn is_deleting(meta: &ObjectMeta) -> bool {
    meta.deletion_timestamp.is_some()
}

/// `metadata.name`, or `""`.
pub fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or("")
}

/// `metadata.namespace`, or `""`.
pub fn namespace(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finalizers_are_added_once_and_the_last_removal_leaves_none() {
        let mut meta = ObjectMeta::default();
        assert!(add_finalizer(&mut meta, "a/f"));
        assert!(!add_finalizer(&mut meta, "a/f"));
        assert!(add_finalizer(&mut meta, "b/f"));
        assert_eq!(meta.finalizers, Some(vec!["a/f".into(), "b/f".into()]));
        assert!(remove_finalizer(&mut meta, "a/f"));
        assert!(!remove_finalizer(&mut meta, "a/f"));
        assert!(remove_finalizer(&mut meta, "b/f"));
        assert_eq!(meta.finalizers, None);
    }

    #[test]
    fn annotation_and_label_edits_report_changes() {
        let mut meta = ObjectMeta::default();
        assert!(set_annotation(&mut meta, "k", "v"));
        assert!(!set_annotation(&mut meta, "k", "v"));
        assert!(set_annotation(&mut meta, "k", "w"));
        assert_eq!(annotation(&meta, "k"), Some("w"));
        assert!(remove_annotation(&mut meta, "k"));
        assert!(!remove_annotation(&mut meta, "k"));
        assert_eq!(meta.annotations, None);
        assert!(set_label(&mut meta, "l", "x"));
        assert!(!set_label(&mut meta, "l", "x"));
        assert_eq!(label(&meta, "l"), Some("x"));
    }
}
