//! A `PromQL` rule's answer from a Prometheus HTTP API response (upstream
//! `pkg/clusterconditions/promql`, `Match`): the query must return an instant vector of exactly
//! one sample whose value is 0 (does not match) or 1 (matches); anything else is an error.
//! Pure: the shell ([`super::prometheus`]) sends the query and passes the response in.

use serde::Deserialize;

use super::cache::MatchResult;

/// The instant query endpoint, below the configured base URL.
pub const QUERY_PATH: &str = "api/v1/query";

/// The query URL for `base` (Go's `path.Join(base.Path, "/api/v1/query")`).
pub fn query_url(base: &str) -> String {
    format!("{}/{QUERY_PATH}", base.trim_end_matches('/'))
}

/// Go's `strconv.FormatFloat(unix + nanos/1e9, 'f', -1, 64)`: the `time` parameter.
pub fn time_parameter(unix_seconds: i64, subsec_nanos: i32) -> String {
    format_float(unix_seconds as f64 + f64::from(subsec_nanos) / 1e9)
}

/// `model.SampleValue`'s `String()`: shortest decimal, `NaN`, `+Inf`, `-Inf`.
fn format_float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        v.to_string()
    }
}

/// The Prometheus HTTP API's envelope around the `data` of an endpoint.
#[derive(Deserialize)]
pub(super) struct Response<D> {
    #[serde(default)]
    pub status: String,
    #[serde(default = "Option::default")]
    pub data: Option<D>,
    #[serde(default, rename = "errorType")]
    pub error_type: String,
    #[serde(default)]
    pub error: String,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    #[serde(default)]
    result: serde_json::Value,
}

/// The rule's answer from the HTTP status and body of the query. Errors read as upstream's
/// (`executing PromQL query: <type>: <message>` for an API error, the Go client's error types).
pub fn interpret(status: u16, body: &[u8]) -> MatchResult {
    let query_error = |e: String| Err(format!("executing PromQL query: {e}"));
    let response: Response<Data> = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(_) if !(200..300).contains(&status) => return query_error(status_error(status)),
        Err(e) => return query_error(format!("bad_response: {e}")),
    };
    if response.status == "error" {
        return query_error(format!("{}: {}", response.error_type, response.error));
    }
    if !(200..300).contains(&status) {
        return query_error("bad_response: inconsistent body for response code".into());
    }
    let Some(data) = response.data else {
        return query_error("bad_response: no data in the response".into());
    };
    if data.result_type != "vector" {
        return Err(format!(
            "invalid PromQL result type is {}, not vector",
            data.result_type
        ));
    }
    let samples = data.result.as_array().map_or(&[][..], Vec::as_slice);
    if samples.len() != 1 {
        return Err(format!(
            "invalid PromQL result length must be one, but is {}",
            samples.len()
        ));
    }
    let value = samples[0]
        .get("value")
        .and_then(|v| v.get(1))
        .and_then(serde_json::Value::as_str)
        .map(parse_value);
    match value {
        Some(Some(0.0)) => Ok(false),
        Some(Some(1.0)) => Ok(true),
        Some(Some(v)) => Err(format!(
            "invalid PromQL result (must be 0 or 1): {}",
            format_float(v)
        )),
        _ => query_error("bad_response: a sample without a value".into()),
    }
}

/// Prometheus writes sample values as Go floats: `NaN`, `+Inf`, `-Inf` included.
fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// The Go client's error for a failing status without a JSON body.
fn status_error(status: u16) -> String {
    match status / 100 {
        4 => format!("client_error: client error: {status}"),
        5 => format!("server_error: server error: {status}"),
        _ => format!("bad_response: bad response code {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(values: &[&str]) -> String {
        let samples: Vec<_> = values
            .iter()
            .map(|v| serde_json::json!({"metric": {}, "value": [1700000000.5, v]}))
            .collect();
        serde_json::json!({"status": "success", "data": {"resultType": "vector", "result": samples}})
            .to_string()
    }

    #[test]
    fn answers_as_upstream() {
        let cases: Vec<(u16, String, MatchResult)> = vec![
            (200, vector(&["1"]), Ok(true)),
            (200, vector(&["0"]), Ok(false)),
            (
                200,
                vector(&[]),
                Err("invalid PromQL result length must be one, but is 0".into()),
            ),
            (
                200,
                vector(&["1", "1"]),
                Err("invalid PromQL result length must be one, but is 2".into()),
            ),
            (
                200,
                vector(&["2"]),
                Err("invalid PromQL result (must be 0 or 1): 2".into()),
            ),
            (
                200,
                vector(&["0.5"]),
                Err("invalid PromQL result (must be 0 or 1): 0.5".into()),
            ),
            (
                200,
                vector(&["+Inf"]),
                Err("invalid PromQL result (must be 0 or 1): +Inf".into()),
            ),
            (
                200,
                r#"{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}"#.into(),
                Err("invalid PromQL result type is scalar, not vector".into()),
            ),
            (
                400,
                r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:7: parse error: unexpected \"}\""}"#.into(),
                Err("executing PromQL query: bad_data: invalid parameter \"query\": 1:7: parse error: unexpected \"}\"".into()),
            ),
            (
                502,
                "Bad Gateway".into(),
                Err("executing PromQL query: server_error: server error: 502".into()),
            ),
        ];
        for (status, body, want) in cases {
            assert_eq!(interpret(status, body.as_bytes()), want, "{body}");
        }
    }

    #[test]
    fn urls_and_times() {
        assert_eq!(
            query_url("http://127.0.0.1:9090/"),
            "http://127.0.0.1:9090/api/v1/query"
        );
        assert_eq!(
            query_url("https://thanos:9091/prefix"),
            "https://thanos:9091/prefix/api/v1/query"
        );
        assert_eq!(time_parameter(1_700_000_000, 500_000_000), "1700000000.5");
        assert_eq!(time_parameter(1_700_000_000, 0), "1700000000");
    }
}
