//! The graph request: upstream's checks before asking (`calculateAvailableUpdatesStatus`, in
//! its order) and the URL with its query (`cincinnati.GetUpdates`).

use super::Failure;
use crate::manifest::go_quote;

/// The public update service, used when neither `cvo start --update-service` nor
/// `spec.upstream` is set (`cvo start --default-update-service` replaces it).
pub const DEFAULT_UPDATE_SERVICE: &str = "https://api.openshift.com/api/upgrades_info/v1/graph";

/// The `Multi` architecture of `spec.desiredUpdate.architecture` and `Release.architecture`.
pub const MULTI: &str = "Multi";

/// What the cluster asks the update service about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// `spec.upstream`, else the default update service (`""`: none).
    pub upstream: String,
    /// `spec.clusterID`.
    pub cluster_id: String,
    /// The architecture asked for: `spec.desiredUpdate.architecture` when set, else the current
    /// one.
    pub desired_arch: String,
    /// The running release's: `Multi` for a multi-architecture payload, else Go's `GOARCH`
    /// name of this process's architecture (`amd64`, `arm64`, ...).
    pub current_arch: String,
    /// `spec.channel`.
    pub channel: String,
    /// The version of the release being reconciled.
    pub version: String,
}

/// A checked request: where to GET the graph, and what the answer is read against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphRequest {
    /// The upstream URL with `arch`, `channel`, `id` and `version` added to its query.
    pub url: String,
    pub version: semver::Version,
    pub channel: String,
    pub desired_arch: String,
    pub current_arch: String,
}

/// Upstream's checks in its order (`NoUpstream`, `InvalidURI`, `InvalidID`, `NoArchitecture`,
/// `NoCurrentVersion`, `NoChannel`, `InvalidCurrentVersion`), then the URL: the upstream's own
/// query parameters kept, `arch` (`multi` for `Multi`), `channel`, `id`, `version` added, and
/// the query re-encoded sorted by key, as Go's `url.Values.Encode`.
pub fn graph_request(query: &Query) -> Result<GraphRequest, Failure> {
    if query.upstream.is_empty() {
        return Err(Failure::NoUpstream);
    }
    if let Some(e) = go_url_error(&query.upstream) {
        return Err(Failure::InvalidUri(e));
    }
    if let Err(e) = parse_uuid(&query.cluster_id) {
        // google/uuid returns the zero UUID with its error; its variant is not RFC4122.
        return Err(Failure::InvalidId(format!(
            "must be an RFC4122-variant UUID: {e}"
        )));
    }
    if query.desired_arch.is_empty() {
        return Err(Failure::NoArchitecture);
    }
    if query.version.is_empty() {
        return Err(Failure::NoCurrentVersion);
    }
    if query.channel.is_empty() {
        return Err(Failure::NoChannel);
    }
    let version =
        semver::Version::parse(&query.version).map_err(|_| Failure::InvalidCurrentVersion)?;
    let arch = if query.desired_arch == MULTI {
        "multi"
    } else {
        query.desired_arch.as_str()
    };
    let (base, fragment) = match query.upstream.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (query.upstream.as_str(), None),
    };
    let (base, existing) = match base.split_once('?') {
        Some((b, q)) => (b, q),
        None => (base, ""),
    };
    let mut pairs: Vec<(String, String)> = existing
        .split(['&'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (unescape(k), unescape(v))
        })
        .collect();
    pairs.extend([
        ("arch".to_string(), arch.to_string()),
        ("channel".to_string(), query.channel.clone()),
        ("id".to_string(), query.cluster_id.clone()),
        ("version".to_string(), version.to_string()),
    ]);
    // Sorted by key, values of a key in order (Go's `Values.Encode`).
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let encoded = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect::<Vec<_>>()
        .join("&");
    let mut url = format!("{base}?{encoded}");
    if let Some(f) = fragment {
        url.push('#');
        url.push_str(f);
    }
    Ok(GraphRequest {
        url,
        version,
        channel: query.channel.clone(),
        desired_arch: query.desired_arch.clone(),
        current_arch: query.current_arch.clone(),
    })
}

/// Go's `url.QueryEscape`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Go's `url.QueryUnescape` for a query that already passed [`go_url_error`].
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => out.push(b),
                    Err(_) => out.extend_from_slice(&bytes[i..i + 3]),
                }
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `uuid.Parse` of google/uuid: 36 characters with dashes, 38 in braces, 45 with `urn:uuid:`,
/// or 32 hex digits; the error is google/uuid's text. Written by hand: the checks need only
/// the bytes.
pub fn parse_uuid(text: &str) -> Result<[u8; 16], String> {
    let inner = match text.len() {
        36 | 32 => text,
        38 if text.starts_with('{') && text.ends_with('}') => &text[1..37],
        45 if text.is_char_boundary(9) && text[..9].eq_ignore_ascii_case("urn:uuid:") => &text[9..],
        45 => {
            let prefix = text.get(..9).unwrap_or(text);
            return Err(format!("invalid urn prefix: {}", go_quote(prefix)));
        }
        38 => return Err("invalid UUID format".into()),
        n => return Err(format!("invalid UUID length: {n}")),
    };
    let format = || "invalid UUID format".to_string();
    let hex: String = if inner.len() == 36 {
        let dashes = [8, 13, 18, 23];
        if dashes.iter().any(|&i| inner.as_bytes()[i] != b'-') {
            return Err(format());
        }
        inner.chars().filter(|&c| c != '-').collect()
    } else {
        inner.to_string()
    };
    let bytes = hex::decode(hex).map_err(|_| format())?;
    bytes.try_into().map_err(|_| format())
}

/// What Go's `url.Parse` rejects that can appear in a spec (control characters, bad `%`
/// escapes, a missing scheme before `:`), as Go's error text; `None` when it parses.
pub fn go_url_error(text: &str) -> Option<String> {
    let quoted = go_quote(text);
    if text.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Some(format!(
            "parse {quoted}: net/url: invalid control character in URL"
        ));
    }
    if text.starts_with(':') {
        return Some(format!("parse {quoted}: missing protocol scheme"));
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let ok = bytes.len() > i + 2
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit();
            if !ok {
                let end = (i + 3).min(bytes.len());
                let escape = String::from_utf8_lossy(&bytes[i..end]);
                return Some(format!(
                    "parse {quoted}: invalid URL escape {}",
                    go_quote(&escape)
                ));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61";

    fn query() -> Query {
        Query {
            upstream: "http://127.0.0.1:8080/graph".into(),
            cluster_id: ID.into(),
            desired_arch: "amd64".into(),
            current_arch: "amd64".into(),
            channel: "stable-4.18".into(),
            version: "4.18.0".into(),
        }
    }

    #[test]
    fn the_url_carries_upstreams_parameters() {
        let r = graph_request(&query()).unwrap();
        assert_eq!(
            r.url,
            format!(
                "http://127.0.0.1:8080/graph?arch=amd64&channel=stable-4.18&id={ID}&version=4.18.0"
            )
        );
        // The upstream's own query is kept; the whole query is sorted by key.
        let r = graph_request(&Query {
            upstream: "https://u.example/graph?z=1&b=a+b#frag".into(),
            desired_arch: MULTI.into(),
            channel: "fast 4.18".into(),
            ..query()
        })
        .unwrap();
        assert_eq!(
            r.url,
            format!(
                "https://u.example/graph?arch=multi&b=a+b&channel=fast+4.18&id={ID}&version=4.18.0&z=1#frag"
            )
        );
    }

    #[test]
    fn checks_come_in_upstreams_order() {
        let cases: Vec<(Query, Failure)> = vec![
            (
                Query {
                    upstream: "".into(),
                    channel: "".into(),
                    ..query()
                },
                Failure::NoUpstream,
            ),
            (
                Query {
                    upstream: "#%GG".into(),
                    cluster_id: "x".into(),
                    ..query()
                },
                Failure::InvalidUri(r##"parse "#%GG": invalid URL escape "%GG""##.into()),
            ),
            (
                Query {
                    cluster_id: "not-valid".into(),
                    ..query()
                },
                Failure::InvalidId(
                    "must be an RFC4122-variant UUID: invalid UUID length: 9".into(),
                ),
            ),
            (
                Query {
                    cluster_id: "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a6z".into(),
                    ..query()
                },
                Failure::InvalidId("must be an RFC4122-variant UUID: invalid UUID format".into()),
            ),
            (
                Query {
                    desired_arch: "".into(),
                    version: "".into(),
                    ..query()
                },
                Failure::NoArchitecture,
            ),
            (
                Query {
                    version: "".into(),
                    channel: "".into(),
                    ..query()
                },
                Failure::NoCurrentVersion,
            ),
            (
                Query {
                    channel: "".into(),
                    version: "x".into(),
                    ..query()
                },
                Failure::NoChannel,
            ),
            (
                Query {
                    version: "4.18".into(),
                    ..query()
                },
                Failure::InvalidCurrentVersion,
            ),
        ];
        for (q, want) in cases {
            assert_eq!(graph_request(&q), Err(want.clone()), "{q:?}");
        }
    }

    #[test]
    fn go_url_errors() {
        assert_eq!(go_url_error("https://a/b?c=%20"), None);
        assert_eq!(
            go_url_error(":x").as_deref(),
            Some(r#"parse ":x": missing protocol scheme"#)
        );
        assert_eq!(
            go_url_error("a\nb").as_deref(),
            Some(r#"parse "a\nb": net/url: invalid control character in URL"#)
        );
    }
}
