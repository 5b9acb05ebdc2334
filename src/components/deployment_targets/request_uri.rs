//! Go's `net/url.ParseRequestURI`, which the Environment webhook applies to `apiURL`: which
//! texts it accepts and the error it gives for the others, word for word.
//!
//! The rules are Go 1.26's, for a module of the current Go version: a bracketed host must hold
//! an IPv6 address (not IPv4, not text), and an `http(s)` host may have only one colon
//! (`urlstrictcolons=1`). Upstream ran on an older Go, which accepted both. Within a bracketed
//! host, the reason `netip.ParseAddr` gives is Go's for IPv4 text and for the shapes it rejects
//! before parsing (no separator, `%` first, empty zone); for other malformed IPv6 text it is a
//! generic one. Everything else (scheme, opaque URIs, authority, userinfo, ports, `%`-escapes in
//! host, zone, userinfo and path; query and fragment unchecked) follows Go exactly.

use std::net::Ipv6Addr;

use crate::manifest::{go_quote, go_quote_bytes};

/// `parse "<url>": <cause>`, as Go's `*url.Error` reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("parse {}: {cause}", go_quote(url))]
pub struct UrlError {
    pub url: String,
    pub cause: UrlErrorCause,
}

/// Why Go refuses a request URI, with Go's texts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlErrorCause {
    #[error("net/url: invalid control character in URL")]
    ControlCharacter,
    #[error("empty url")]
    Empty,
    /// A colon before any scheme character.
    #[error("missing protocol scheme")]
    MissingScheme,
    /// Neither `scheme:...` nor an absolute path.
    #[error("invalid URI for request")]
    NotForRequest,
    #[error("net/url: invalid userinfo")]
    InvalidUserinfo,
    #[error("missing ']' in host")]
    MissingBracket,
    /// A `[` not at the start of the host, or an IPv4 address in brackets.
    #[error("invalid IP-literal")]
    InvalidIpLiteral,
    #[error("invalid host: ParseAddr({}): {reason}", go_quote_bytes(address))]
    InvalidAddress {
        address: Vec<u8>,
        /// netip's reason, with `(at "<rest>")` where it names the place.
        reason: String,
    },
    #[error("invalid port {} after host", go_quote(.0))]
    InvalidPort(String),
    /// A `%` not followed by two hex digits, or escaping what a host may not escape.
    #[error("invalid URL escape {}", go_quote_bytes(.0))]
    Escape(Vec<u8>),
    #[error("invalid character {} in host name", go_quote(.0))]
    HostCharacter(String),
}

use UrlErrorCause as Cause;

/// Whether Go's `url.ParseRequestURI(raw)` succeeds, and its error when not.
pub fn parse_request_uri(raw: &str) -> Result<(), UrlError> {
    parse(raw).map_err(|cause| UrlError {
        url: raw.to_owned(),
        cause,
    })
}

fn parse(raw: &str) -> Result<(), Cause> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err(Cause::ControlCharacter);
    }
    if raw.is_empty() {
        return Err(Cause::Empty);
    }
    if raw == "*" {
        return Ok(());
    }
    let (scheme, rest) = split_scheme(raw)?;
    // The query is kept as it is, unchecked.
    let rest = rest.split_once('?').map_or(rest, |(before, _)| before);
    if !rest.starts_with('/') {
        // `scheme:opaque` is a URI; a relative reference is not a request URI.
        return if scheme.is_empty() {
            Err(Cause::NotForRequest)
        } else {
            Ok(())
        };
    }
    let path = match rest.strip_prefix("//").filter(|_| !scheme.is_empty()) {
        Some(authority_and_path) => {
            let slash = authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len());
            let (authority, path) = authority_and_path.split_at(slash);
            parse_authority(&scheme.to_ascii_lowercase(), authority)?;
            path
        }
        None => rest,
    };
    unescape(path.as_bytes(), Mode::Path).map(drop)
}

/// Go's `getScheme`: `[a-zA-Z][a-zA-Z0-9+.-]*` before the first colon, else no scheme.
fn split_scheme(raw: &str) -> Result<(&str, &str), Cause> {
    for (i, b) in raw.bytes().enumerate() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err(Cause::MissingScheme),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// `[userinfo@]host[:port]`; the host is checked first, as Go does. The last `@` ends the
/// userinfo, which may hold more (`user:p@ss@host`).
fn parse_authority(scheme: &str, authority: &str) -> Result<(), Cause> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    parse_host(scheme, host)?;
    let Some(userinfo) = userinfo else {
        return Ok(());
    };
    if !userinfo.chars().all(valid_userinfo_char) {
        return Err(Cause::InvalidUserinfo);
    }
    for part in userinfo.splitn(2, ':') {
        unescape(part.as_bytes(), Mode::UserPassword)?;
    }
    Ok(())
}

fn valid_userinfo_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c)
}

fn parse_host(scheme: &str, host: &str) -> Result<(), Cause> {
    match host.rfind('[') {
        Some(0) => parse_ip_literal(host),
        Some(_) => Err(Cause::InvalidIpLiteral),
        None => {
            if let Some(first) = host.find(':') {
                // Go 1.26 keeps the first colon of an http(s) host, so that a second one makes
                // the port invalid; other schemes (database host lists) take the last.
                let web = scheme == "http" || scheme == "https";
                let colon = if web {
                    first
                } else {
                    host.rfind(':').unwrap_or(first)
                };
                check_port(&host[colon..])?;
            }
            unescape(host.as_bytes(), Mode::Host).map(drop)
        }
    }
}

/// `[address]` or `[address%25zone]`, then an optional port.
fn parse_ip_literal(host: &str) -> Result<(), Cause> {
    let close = host.rfind(']').ok_or(Cause::MissingBracket)?;
    check_port(&host[close + 1..])?;
    let inside = &host.as_bytes()[1..close];
    let zone = (inside.windows(3)).position(|w| w == b"%25");
    let address = match zone {
        Some(z) => {
            let mut address = unescape(&inside[..z], Mode::Host)?;
            address.extend(unescape(&inside[z..], Mode::Zone)?);
            address
        }
        None => unescape(inside, Mode::Host)?,
    };
    check_ipv6_literal(address)
}

fn check_port(port: &str) -> Result<(), Cause> {
    let valid = port.is_empty()
        || (port.strip_prefix(':'))
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()));
    match valid {
        true => Ok(()),
        false => Err(Cause::InvalidPort(port.to_owned())),
    }
}

/// `netip.ParseAddr` and the check that brackets hold IPv6: it tells the kind of address by the
/// first `.`, `:` or `%`.
fn check_ipv6_literal(address: Vec<u8>) -> Result<(), Cause> {
    let invalid = |address, reason: String| Err(Cause::InvalidAddress { address, reason });
    match address.iter().find(|b| matches!(b, b'.' | b':' | b'%')) {
        Some(b'.') => match ipv4_error(&address) {
            None => Err(Cause::InvalidIpLiteral),
            Some(reason) => invalid(address, reason),
        },
        Some(b':') => match ipv6_error(&address) {
            None => Ok(()),
            Some(reason) => invalid(address, reason),
        },
        Some(_) => invalid(address, "missing IPv6 address".into()),
        None => invalid(address, "unable to parse IP".into()),
    }
}

/// Go's `parseIPv4Fields`.
fn ipv4_error(text: &[u8]) -> Option<String> {
    let at = |i: usize, reason: &str| {
        let rest = go_quote_bytes(&text[i..]);
        Some(format!("{reason} (at {rest})"))
    };
    let (mut value, mut digits, mut dots) = (0u32, 0, 0);
    for (i, &b) in text.iter().enumerate() {
        match b {
            b'0'..=b'9' if digits == 1 && value == 0 => {
                return Some("IPv4 field has octet with leading zero".into());
            }
            b'0'..=b'9' => {
                value = value * 10 + u32::from(b - b'0');
                digits += 1;
                if value > 255 {
                    return Some("IPv4 field has value >255".into());
                }
            }
            b'.' if i == 0 || i == text.len() - 1 || text[i - 1] == b'.' => {
                return at(i, "IPv4 field must have at least one digit");
            }
            b'.' if dots == 3 => return Some("IPv4 address too long".into()),
            b'.' => (value, digits, dots) = (0, 0, dots + 1),
            _ => return at(i, "unexpected character"),
        }
    }
    (dots < 3).then(|| "IPv4 address too short".into())
}

/// IPv6 text as `netip` accepts it; its reasons only for an empty zone.
fn ipv6_error(text: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(text);
    let (address, zone) = text.split_once('%').unwrap_or((&text, "-"));
    if zone.is_empty() {
        return Some("zone must be a non-empty string".into());
    }
    (address.parse::<Ipv6Addr>().err()).map(|_| "invalid IPv6 address".into())
}

/// Which part of a URL is unescaped: each allows different characters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    UserPassword,
    Host,
    Zone,
}

/// Go's `unescape`: every `%` must start two hex digits; a host may escape only non-ASCII
/// bytes (and `%25`), and may hold only the characters Go allows in hosts.
fn unescape(s: &[u8], mode: Mode) -> Result<Vec<u8>, Cause> {
    let host_like = matches!(mode, Mode::Host | Mode::Zone);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'%' {
            if host_like && s[i] < 0x80 && !host_char(s[i]) {
                return Err(Cause::HostCharacter(char::from(s[i]).to_string()));
            }
            out.push(s[i]);
            i += 1;
            continue;
        }
        let escape = &s[i..s.len().min(i + 3)];
        let byte = decode_escape(escape).ok_or_else(|| Cause::Escape(escape.to_vec()))?;
        let refused = match mode {
            Mode::Host => byte < 0x80 && escape != b"%25",
            // A zone may escape what it could hold unescaped, and a space (Windows).
            Mode::Zone => escape != b"%25" && byte != b' ' && !host_char(byte),
            Mode::Path | Mode::UserPassword => false,
        };
        if refused {
            return Err(Cause::Escape(escape.to_vec()));
        }
        out.push(byte);
        i += 3;
    }
    Ok(out)
}

fn decode_escape(escape: &[u8]) -> Option<u8> {
    let [b'%', high, low] = escape else {
        return None;
    };
    let hex = |b: u8| char::from(b).to_digit(16);
    Some((hex(*high)? * 16 + hex(*low)?) as u8)
}

/// The bytes Go's `shouldEscape(c, encodeHost)` lets stand in a host (ASCII only).
fn host_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!$&'()*+,;=:[]<>\"-_.~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs and Go 1.26's `url.ParseRequestURI` results (`None`: accepted), printed by Go.
    const GO: &[(&str, Option<&str>)] = &[
        ("https://api.test.com:6443", None),
        ("http://localhost", None),
        ("localhost:6443", None),
        ("mailto:someone", None),
        ("/just/a/path", None),
        ("*", None),
        ("https:", None),
        ("https://", None),
        ("http:/path", None),
        ("HTTPS://Host", None),
        ("https://h?%x", None),
        ("https://h/path#frag", None),
        ("https://ünïcode.example", None),
        ("https://user:p@ss@host", None),
        ("https://h\"q/", None),
        ("https://[::1]:6443", None),
        ("https://[fe80::1%25en0]:80", None),
        ("https://[::ffff:1.2.3.4]", None),
        ("https://h/%99999999x", None),
        ("ftp://a:1:2", None),
        (
            "api.test.com",
            Some(r#"parse "api.test.com": invalid URI for request"#),
        ),
        (
            "1http://x",
            Some(r#"parse "1http://x": invalid URI for request"#),
        ),
        (":foo", Some(r#"parse ":foo": missing protocol scheme"#)),
        (
            "https://api.test.com:port",
            Some(r#"parse "https://api.test.com:port": invalid port ":port" after host"#),
        ),
        (
            "https://h:80x",
            Some(r#"parse "https://h:80x": invalid port ":80x" after host"#),
        ),
        (
            "https://a:1:2",
            Some(r#"parse "https://a:1:2": invalid port ":1:2" after host"#),
        ),
        (
            "https://h:%25",
            Some(r#"parse "https://h:%25": invalid port ":%25" after host"#),
        ),
        (
            "https://[::1",
            Some(r#"parse "https://[::1": missing ']' in host"#),
        ),
        (
            "https://[::1]x",
            Some(r#"parse "https://[::1]x": invalid port "x" after host"#),
        ),
        (
            "https://[1.2.3.4]",
            Some(r#"parse "https://[1.2.3.4]": invalid IP-literal"#),
        ),
        (
            "https://a[::1]",
            Some(r#"parse "https://a[::1]": invalid IP-literal"#),
        ),
        (
            "https://[zz]",
            Some(r#"parse "https://[zz]": invalid host: ParseAddr("zz"): unable to parse IP"#),
        ),
        (
            "https://[%25en0]",
            Some(
                r#"parse "https://[%25en0]": invalid host: ParseAddr("%en0"): missing IPv6 address"#,
            ),
        ),
        (
            "https://[1.2.3.04]",
            Some(
                r#"parse "https://[1.2.3.04]": invalid host: ParseAddr("1.2.3.04"): IPv4 field has octet with leading zero"#,
            ),
        ),
        (
            "https://[1.2.3.256]",
            Some(
                r#"parse "https://[1.2.3.256]": invalid host: ParseAddr("1.2.3.256"): IPv4 field has value >255"#,
            ),
        ),
        (
            "https://[1.2.3]",
            Some(
                r#"parse "https://[1.2.3]": invalid host: ParseAddr("1.2.3"): IPv4 address too short"#,
            ),
        ),
        (
            "https://[1.2.3.4.5]",
            Some(
                r#"parse "https://[1.2.3.4.5]": invalid host: ParseAddr("1.2.3.4.5"): IPv4 address too long"#,
            ),
        ),
        (
            "https://[1.2.x.4]",
            Some(
                r#"parse "https://[1.2.x.4]": invalid host: ParseAddr("1.2.x.4"): unexpected character (at "x.4")"#,
            ),
        ),
        (
            "https://[1..2.3]",
            Some(
                r#"parse "https://[1..2.3]": invalid host: ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")"#,
            ),
        ),
        ("https://[::1.2.3.4]", None),
        (
            "https://exa mple.com",
            Some(r#"parse "https://exa mple.com": invalid character " " in host name"#),
        ),
        (
            "https://h\\x/",
            Some(r#"parse "https://h\\x/": invalid character "\\" in host name"#),
        ),
        (
            "https://us er@host",
            Some(r#"parse "https://us er@host": net/url: invalid userinfo"#),
        ),
        (
            "https://u%zz:p@host",
            Some(r#"parse "https://u%zz:p@host": invalid URL escape "%zz""#),
        ),
        (
            "https://example.com/%zz",
            Some(r#"parse "https://example.com/%zz": invalid URL escape "%zz""#),
        ),
        (
            "https://ex%41mple.com",
            Some(r#"parse "https://ex%41mple.com": invalid URL escape "%41""#),
        ),
        (
            "http://h/%4",
            Some(r#"parse "http://h/%4": invalid URL escape "%4""#),
        ),
        (
            "https://h/a%",
            Some(r#"parse "https://h/a%": invalid URL escape "%""#),
        ),
        (
            "https://h/%€",
            Some(r#"parse "https://h/%€": invalid URL escape "%\xe2\x82""#),
        ),
        (
            "https://host\u{7f}",
            Some(r#"parse "https://host\x7f": net/url: invalid control character in URL"#),
        ),
        (
            "https://host\u{7}",
            Some(r#"parse "https://host\a": net/url: invalid control character in URL"#),
        ),
        ("", Some(r#"parse "": empty url"#)),
    ];

    #[test]
    fn malformed_ipv6_is_refused_with_a_generic_reason() {
        // Go: `trailing garbage after address (at "9")`; the reason is the one divergence.
        let error = parse_request_uri("https://[1:2:3:4:5:6:7:8:9]").unwrap_err();
        let address = b"1:2:3:4:5:6:7:8:9".to_vec();
        let reason = "invalid IPv6 address".to_owned();
        assert_eq!(error.cause, Cause::InvalidAddress { address, reason });
    }

    #[test]
    fn accepts_and_refuses_as_go_does_with_go_messages() {
        for (input, expected) in GO {
            let got = parse_request_uri(input).err().map(|e| e.to_string());
            assert_eq!(got.as_deref(), *expected, "{input:?}");
        }
    }

    #[test]
    fn a_zone_may_escape_only_what_it_could_hold_and_a_space() {
        assert_eq!(parse_request_uri("https://[fe80::1%25en%200]"), Ok(()));
        let error = parse_request_uri("https://[fe80::1%25en%2f]").unwrap_err();
        assert_eq!(error.cause, Cause::Escape(b"%2f".to_vec()));
        let error = parse_request_uri("https://[fe80::1%25]").unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"parse "https://[fe80::1%25]": invalid host: ParseAddr("fe80::1%"): zone must be a non-empty string"#
        );
    }
}
