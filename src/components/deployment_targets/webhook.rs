//! The Environment admission webhook (spec A.8), as managed-gitops's `environment_webhook.go`
//! validates creates and updates, with its messages; and the AdmissionReview v1 exchange as
//! controller-runtime answers it, as pure functions over JSON (the HTTP server is the shell's).

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use serde_json::Value;

use super::dns1123;
use super::request_uri::{UrlError, parse_request_uri};
use super::types::Environment;
use crate::manifest::go_quote;

/// application-api's `InvalidAPIURL`, which upstream appends to Go's URL error (trailing space
/// included).
const INVALID_API_URL: &str = ": API URL must be an absolute URL starting with an 'https' scheme ";

/// Why the webhook refuses an Environment; the text is what the user reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// Checked on create only, as upstream.
    #[error(
        "invalid environment name: {0}, an environment resource name must start with a lower case alphabetical character, be under 63 characters, and can only consist of lower case alphanumeric characters or ‘-’"
    )]
    InvalidName(String),
    #[error("ingress domain cannot be empty if cluster is of type Kubernetes")]
    MissingIngressDomain,
    #[error(
        "invalid ingress domain: {}: an ingress domain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        go_quote(.0)
    )]
    InvalidIngressDomain(String),
    /// Upstream builds this message with `fmt.Errorf(err.Error() + InvalidAPIURL)`, so Go's fmt
    /// reads a `%` in the URL as a verb without argument: the text keeps that mangling.
    #[error("{}", go_errorf_without_arguments(&format!("{}{INVALID_API_URL}", .0)))]
    InvalidApiUrl(UrlError),
}

/// Upstream's `ValidateCreate`: the name must be a DNS-1123 label (an empty name, as a
/// `generateName` create has, is refused too), then the configuration rules.
pub fn validate_create(env: &Environment) -> Result<(), Rejection> {
    let name = env.metadata.name.as_deref().unwrap_or("");
    if !dns1123::label_errors(name).is_empty() {
        return Err(Rejection::InvalidName(name.to_owned()));
    }
    validate_configuration(env)
}

/// Upstream's `ValidateUpdate`: the configuration rules of the new object (a name cannot change).
pub fn validate_update(_old: &Environment, new: &Environment) -> Result<(), Rejection> {
    validate_configuration(new)
}

/// `unstableConfigurationFields`: a Kubernetes cluster needs an ingress domain, which must be a
/// DNS-1123 subdomain; an API URL must be what Go's `url.ParseRequestURI` accepts.
fn validate_configuration(env: &Environment) -> Result<(), Rejection> {
    let Some(fields) = &env.spec.unstable_configuration_fields else {
        return Ok(());
    };
    let credentials = &fields.kubernetes_credentials;
    let domain = credentials.ingress_domain.as_str();
    if fields.cluster_type.as_deref() == Some("Kubernetes") && domain.is_empty() {
        return Err(Rejection::MissingIngressDomain);
    }
    if !domain.is_empty() && !dns1123::subdomain_errors(domain).is_empty() {
        return Err(Rejection::InvalidIngressDomain(domain.to_owned()));
    }
    match credentials.api_url.as_str() {
        "" => Ok(()),
        url => parse_request_uri(url).map_err(Rejection::InvalidApiUrl),
    }
}

/// Why a review cannot be judged: controller-runtime answers these with code 400.
#[derive(Debug, thiserror::Error)]
enum ReviewError {
    #[error("{0}")]
    Decode(#[from] serde_json::Error),
    #[error("{0}")]
    NoRequest(#[from] kube::core::admission::ConvertAdmissionReviewError),
    #[error("this webhook validates appstudio.redhat.com Environments, not {group}/{kind}")]
    NotEnvironment { group: String, kind: String },
    /// controller-runtime's decoder's text for a missing object.
    #[error("there is no content to decode")]
    NoContent,
}

/// Answers an AdmissionReview (v1, or v1beta1, echoed) for an Environment as controller-runtime
/// does for upstream's validator: allowed is `{allowed: true, status: {code: 200}}`; a rejection
/// is code 403, reason `Forbidden` and the message; a review that cannot be read, or that is
/// not about an Environment, is code 400 with the reason as message. Never panics.
pub fn review(request: &Value) -> Value {
    let response = match read_request(request) {
        Ok(req) => judge(&req),
        Err(error) => malformed(request, &error),
    };
    serde_json::to_value(response.into_review()).unwrap_or_default()
}

fn read_request(request: &Value) -> Result<AdmissionRequest<DynamicObject>, ReviewError> {
    let review: AdmissionReview<DynamicObject> = serde_json::from_value(request.clone())?;
    let req: AdmissionRequest<DynamicObject> = review.try_into()?;
    if (req.kind.group.as_str(), req.kind.kind.as_str()) != ("appstudio.redhat.com", "Environment")
    {
        let (group, kind) = (req.kind.group.clone(), req.kind.kind.clone());
        return Err(ReviewError::NotEnvironment { group, kind });
    }
    Ok(req)
}

/// The request's verdict: creates and updates are validated; deletes (whose old object must
/// still decode, as controller-runtime checks) and connects are allowed.
fn judge(req: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let verdict = match req.operation {
        Operation::Create => decode(&req.object).map(|env| validate_create(&env)),
        Operation::Update => (decode(&req.object))
            .and_then(|new| Ok((decode(&req.old_object)?, new)))
            .map(|(old, new)| validate_update(&old, &new)),
        Operation::Delete => decode(&req.old_object).map(|_| Ok(())),
        Operation::Connect => Ok(Ok(())),
    };
    let response = AdmissionResponse::from(req);
    match verdict {
        Ok(Ok(())) => with_status(response, true, 200, "", String::new()),
        Ok(Err(rejection)) => with_status(response, false, 403, "Forbidden", rejection.to_string()),
        Err(error) => with_status(response, false, 400, "", error.to_string()),
    }
}

fn decode(object: &Option<DynamicObject>) -> Result<Environment, ReviewError> {
    let object = object.as_ref().ok_or(ReviewError::NoContent)?;
    Ok(serde_json::from_value(serde_json::to_value(object)?)?)
}

/// A 400 for a review that could not be read; its uid is kept when it can be found, so that
/// the API server can match the answer.
fn malformed(request: &Value, error: &ReviewError) -> AdmissionResponse {
    let mut response = AdmissionResponse::invalid(error);
    let uid = request.pointer("/request/uid").and_then(Value::as_str);
    response.uid = uid.unwrap_or_default().to_owned();
    with_status(response, false, 400, "", error.to_string())
}

fn with_status(
    mut response: AdmissionResponse,
    allowed: bool,
    code: u16,
    reason: &str,
    message: String,
) -> AdmissionResponse {
    response.allowed = allowed;
    response.result = kube::core::Status {
        code,
        reason: reason.to_owned(),
        message,
        ..kube::core::Status::default()
    };
    response
}

/// What Go's `fmt.Errorf(format)` gives for a format with no arguments: `%%` is `%`, and every
/// other directive (flags, width, precision, `[n]` index, verb) becomes `%!<verb>(MISSING)`,
/// `%!<verb>(BADINDEX)`, `%!(BADWIDTH)`, `%!(BADPREC)` or `%!(NOVERB)`, as Go's `doPrintf`.
fn go_errorf_without_arguments(format: &str) -> String {
    let mut out = String::with_capacity(format.len());
    let mut rest = format;
    while let Some(percent) = rest.find('%') {
        out.push_str(&rest[..percent]);
        let (directive, consumed) = directive(&rest[percent + 1..]);
        out.push_str(&directive);
        rest = &rest[percent + 1 + consumed..];
    }
    out + rest
}

/// One directive after its `%`: its text, and how many bytes of `s` it took.
fn directive(s: &str) -> (String, usize) {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = b.iter().take_while(|c| b"#0+- ".contains(c)).count();
    let mut good = true;
    let mut after_index = argument_index(b, &mut i, &mut good);
    if star(b, &mut i, &mut out, "%!(BADWIDTH)") {
        after_index = false;
    } else if number(b, &mut i) && after_index {
        good = false;
    }
    if i + 1 < b.len() && b[i] == b'.' {
        i += 1;
        good &= !after_index;
        after_index = argument_index(b, &mut i, &mut good);
        if star(b, &mut i, &mut out, "%!(BADPREC)") {
            after_index = false;
        } else {
            number(b, &mut i);
        }
    }
    if !after_index {
        argument_index(b, &mut i, &mut good);
    }
    let Some(verb) = s.get(i..).and_then(|r| r.chars().next()) else {
        return (out + "%!(NOVERB)", b.len());
    };
    let text = match (verb, good) {
        ('%', _) => "%".to_owned(),
        (verb, false) => format!("%!{verb}(BADINDEX)"),
        (verb, true) => format!("%!{verb}(MISSING)"),
    };
    (out + &text, i + verb.len_utf8())
}

/// A `*` width or precision wants an argument there is not; Go says so in place.
fn star(b: &[u8], i: &mut usize, out: &mut String, complaint: &str) -> bool {
    if b.get(*i) != Some(&b'*') {
        return false;
    }
    *i += 1;
    out.push_str(complaint);
    true
}

/// Go's `argNumber` with no arguments: a `[n]` is always a bad index; whether a well-formed one
/// was there.
fn argument_index(b: &[u8], i: &mut usize, good: &mut bool) -> bool {
    if b.get(*i) != Some(&b'[') {
        return false;
    }
    *good = false;
    let rest = &b[*i..];
    let close = (rest.len() >= 3).then(|| rest.iter().position(|&c| c == b']'));
    let Some(close) = close.flatten() else {
        *i += 1;
        return false;
    };
    *i += close + 1;
    parse_number(rest, 1, close) == (true, close)
}

/// Digits at `i`, if any, as Go's `parsenum` takes them.
fn number(b: &[u8], i: &mut usize) -> bool {
    let (present, stop) = parse_number(b, *i, b.len());
    *i = stop;
    present
}

/// Go's `parsenum` over `b[start..end]`: whether there were digits, and where it stopped; a
/// number past 10^6 is no number and stops at `end`.
fn parse_number(b: &[u8], start: usize, end: usize) -> (bool, usize) {
    let mut value = 0u64;
    let mut i = start;
    while i < end && b[i].is_ascii_digit() {
        if value > 1_000_000 {
            return (false, end);
        }
        value = value * 10 + u64::from(b[i] - b'0');
        i += 1;
    }
    (i > start, i)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::components::deployment_targets::types::{
        EnvironmentCredentials, EnvironmentSpec, UnstableEnvironmentConfiguration,
    };

    const BAD_DOMAIN: &str = "AbADIngr3ssDomaiN.CoM";

    fn env(name: &str, cluster_type: Option<&str>, domain: &str, api_url: &str) -> Environment {
        let mut env = Environment::new(
            name,
            EnvironmentSpec {
                display_name: "Staging".into(),
                deployment_strategy: "AppStudioAutomated".into(),
                ..EnvironmentSpec::default()
            },
        );
        env.spec.unstable_configuration_fields =
            cluster_type.map(|t| UnstableEnvironmentConfiguration {
                cluster_type: Some(t.into()),
                kubernetes_credentials: EnvironmentCredentials {
                    ingress_domain: domain.into(),
                    api_url: api_url.into(),
                    ..EnvironmentCredentials::default()
                },
            });
        env
    }

    fn name_message(name: &str) -> String {
        format!(
            "invalid environment name: {name}, an environment resource name must start with a lower case alphabetical character, be under 63 characters, and can only consist of lower case alphanumeric characters or ‘-’"
        )
    }

    fn domain_message(domain: &str) -> String {
        format!(
            "invalid ingress domain: \"{domain}\": an ingress domain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    }

    /// Upstream's webhook unit tests (create and update), with their exact expectations.
    #[test]
    fn upstream_cases_on_create_and_update() {
        let missing = "ingress domain cannot be empty if cluster is of type Kubernetes".to_owned();
        let api = "parse \"api.test.com\": invalid URI for request: API URL must be an absolute URL starting with an 'https' scheme ";
        let long = "abcde".repeat(13);
        let k8s = Some("Kubernetes");
        let ocp = Some("OpenShift");
        let cases: Vec<(Environment, Option<String>, Option<String>)> = vec![
            (
                env("kubernetes-environment", k8s, "", ""),
                Some(missing.clone()),
                Some(missing),
            ),
            (
                env("kubernetes-environment", k8s, BAD_DOMAIN, ""),
                Some(domain_message(BAD_DOMAIN)),
                Some(domain_message(BAD_DOMAIN)),
            ),
            (env("kubernetes-environment", k8s, "domain", ""), None, None),
            (env("kubernetes-environment", None, "", ""), None, None),
            (env("kubernetes-environment", ocp, "", ""), None, None),
            (
                env("kubernetes-environment", ocp, BAD_DOMAIN, ""),
                Some(domain_message(BAD_DOMAIN)),
                Some(domain_message(BAD_DOMAIN)),
            ),
            (
                env("kubernetes-environment-1", ocp, "domain", ""),
                None,
                None,
            ),
            (
                env("Kubernetes-environment", ocp, "domain", ""),
                Some(name_message("Kubernetes-environment")),
                None,
            ),
            (
                env("kubernetesEnvironment", ocp, "domain", ""),
                Some(name_message("kubernetesEnvironment")),
                None,
            ),
            (
                env(&long, ocp, BAD_DOMAIN, ""),
                Some(name_message(&long)),
                Some(domain_message(BAD_DOMAIN)),
            ),
            (
                env("kubernetes-environment-1", ocp, "domain", "api.test.com"),
                Some(api.to_owned()),
                Some(api.to_owned()),
            ),
            (
                env(
                    "kubernetes-environment-1",
                    ocp,
                    "domain",
                    "https://api.test.com:6443",
                ),
                None,
                None,
            ),
            (env("", None, "", ""), Some(name_message("")), None),
        ];
        for (env, on_create, on_update) in cases {
            let created = validate_create(&env).err().map(|e| e.to_string());
            assert_eq!(created, on_create, "create {:?}", env.metadata.name);
            let updated = validate_update(&env, &env).err().map(|e| e.to_string());
            assert_eq!(updated, on_update, "update {:?}", env.metadata.name);
        }
    }

    /// Go's `fmt.Errorf(err.Error() + InvalidAPIURL)`, printed by Go 1.26.
    #[test]
    fn api_url_messages_keep_go_fmt_mangling() {
        let cases = [
            (
                "https://example.com/%zz",
                "parse \"https://example.com/%!z(MISSING)z\": invalid URL escape \"%!z(MISSING)z\"",
            ),
            (
                "https://ex%41mple.com",
                "parse \"https://ex%!m(MISSING)ple.com\": invalid URL escape \"%!\"(MISSING)",
            ),
            (
                "http://h/%4",
                "parse \"http://h/%!\"(MISSING): invalid URL escape \"%!\"(MISSING)",
            ),
            (
                "https://h:%25",
                "parse \"https://h:%!\"(MISSING): invalid port \":%!\"(MISSING) after host",
            ),
            (
                "https://h/%[1]d",
                "parse \"https://h/%!d(BADINDEX)\": invalid URL escape \"%!\"(BADINDEX)",
            ),
            (
                "https://h/%*d",
                "parse \"https://h/%!(BADWIDTH)%!d(MISSING)\": invalid URL escape \"%!(BADWIDTH)%!d(MISSING)\"",
            ),
            (
                "https://h/%.*d",
                "parse \"https://h/%!(BADPREC)%!d(MISSING)\": invalid URL escape \"%!(BADPREC)%!\"(MISSING)",
            ),
            (
                "https://h/%-5.3x",
                "parse \"https://h/%!x(MISSING)\": invalid URL escape \"%!\"(MISSING)",
            ),
            (
                "https://h/%%zz",
                "parse \"https://h/%zz\": invalid URL escape \"%z\"",
            ),
        ];
        for (url, expected) in cases {
            let rejection = validate_create(&env("env", Some("OpenShift"), "", url)).unwrap_err();
            assert_eq!(
                rejection.to_string(),
                format!("{expected}{INVALID_API_URL}"),
                "{url}"
            );
        }
    }

    /// `https://h x/<directive>` (a host-name error quoting the directive), as Go 1.26 prints
    /// upstream's message; what follows the directive is the same in every case.
    #[test]
    fn go_fmt_directives_without_arguments() {
        let tail = ": invalid character \" \" in host name: API URL must be an absolute URL starting with an 'https' scheme ";
        let cases = [
            ("%12345678", "%!(NOVERB)", ""),
            ("%1234567", "%!\"(MISSING)", tail),
            ("%[x]d", "%!d(BADINDEX)\"", tail),
            ("%[]d", "%!d(BADINDEX)\"", tail),
            ("%[2]d", "%!d(BADINDEX)\"", tail),
            ("%[1]3d", "%!d(BADINDEX)\"", tail),
            ("%3[1].2d", "%!.(BADINDEX)2d\"", tail),
            ("%é", "%!é(MISSING)\"", tail),
            ("%.", "%!\"(MISSING)", tail),
            ("%5.x", "%!x(MISSING)\"", tail),
            ("%+#0- v", "%!v(MISSING)\"", tail),
        ];
        for (directive, printed, tail) in cases {
            let url = format!("https://h x/{directive}");
            let rejection = validate_create(&env("env", Some("OpenShift"), "", &url)).unwrap_err();
            let expected = format!("parse \"https://h x/{printed}{tail}");
            assert_eq!(rejection.to_string(), expected, "{directive}");
        }
        assert_eq!(
            go_errorf_without_arguments("100%% and %"),
            "100% and %!(NOVERB)"
        );
    }

    fn admission(operation: &str, object: Option<Value>, old: Option<Value>) -> Value {
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "appstudio.redhat.com", "version": "v1alpha1", "kind": "Environment"},
                "resource": {"group": "appstudio.redhat.com", "version": "v1alpha1", "resource": "environments"},
                "namespace": "team",
                "operation": operation,
                "userInfo": {"username": "alice"},
                "object": object,
                "oldObject": old,
            }
        })
    }

    fn object(name: &str, domain: &str) -> Value {
        let env = env(
            name,
            Some("Kubernetes"),
            domain,
            "https://api.example.com:6443",
        );
        serde_json::to_value(env).unwrap()
    }

    fn response_of(review: &Value) -> Value {
        assert_eq!(review["kind"], "AdmissionReview");
        review["response"].clone()
    }

    #[test]
    fn reviews_are_answered_as_controller_runtime_answers() {
        let allowed = review(&admission(
            "CREATE",
            Some(object("dev", "apps.example.com")),
            None,
        ));
        assert_eq!(allowed["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(
            response_of(&allowed),
            json!({"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": true, "status": {"code": 200}})
        );

        let denied = review(&admission("CREATE", Some(object("dev", "")), None));
        let message = "ingress domain cannot be empty if cluster is of type Kubernetes";
        assert_eq!(
            response_of(&denied),
            json!({
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "allowed": false,
                "status": {"code": 403, "reason": "Forbidden", "message": message}
            })
        );
    }

    #[test]
    fn updates_skip_the_name_rule_and_deletes_and_connects_are_allowed() {
        let bad_name = object("Dev", "apps.example.com");
        let update = admission("UPDATE", Some(bad_name.clone()), Some(bad_name.clone()));
        assert_eq!(response_of(&review(&update))["allowed"], true);
        let create = admission("CREATE", Some(bad_name.clone()), None);
        assert_eq!(
            response_of(&review(&create))["status"]["message"],
            name_message("Dev")
        );
        let bad_domain = object("dev", BAD_DOMAIN);
        let update = admission("UPDATE", Some(bad_domain.clone()), Some(bad_name.clone()));
        let status = &response_of(&review(&update))["status"];
        assert_eq!(
            (status["code"].clone(), status["message"].clone()),
            (json!(403), json!(domain_message(BAD_DOMAIN)))
        );
        let delete = admission("DELETE", None, Some(bad_domain));
        assert_eq!(response_of(&review(&delete))["allowed"], true);
        let connect = admission("CONNECT", None, None);
        assert_eq!(response_of(&review(&connect))["allowed"], true);
    }

    #[test]
    fn v1beta1_reviews_are_answered_in_v1beta1() {
        let mut request = admission("CREATE", Some(object("dev", "apps.example.com")), None);
        request["apiVersion"] = json!("admission.k8s.io/v1beta1");
        assert_eq!(review(&request)["apiVersion"], "admission.k8s.io/v1beta1");
    }

    #[test]
    fn unreadable_reviews_are_400_and_never_panic() {
        let uid = "705ab4f5-6393-11e8-b7cc-42010a800002";
        let mut other_kind = admission("CREATE", Some(object("dev", "a.b")), None);
        other_kind["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "ConfigMap"});
        let mut bad_spec = admission("CREATE", Some(object("dev", "a.b")), None);
        bad_spec["request"]["object"]["spec"] = json!("not an object");
        let cases = [
            (
                admission("CREATE", None, None),
                uid,
                Some("there is no content to decode"),
            ),
            (
                admission("UPDATE", Some(object("dev", "a.b")), None),
                uid,
                Some("there is no content to decode"),
            ),
            (
                admission("DELETE", None, None),
                uid,
                Some("there is no content to decode"),
            ),
            (
                other_kind,
                uid,
                Some("this webhook validates appstudio.redhat.com Environments, not /ConfigMap"),
            ),
            (bad_spec, uid, None),
            (admission("PATCH", None, None), uid, None),
            (
                json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}),
                "",
                None,
            ),
            (json!([1, 2, 3]), "", None),
            (json!(null), "", None),
        ];
        for (request, uid, message) in cases {
            let response = response_of(&review(&request));
            assert_eq!(response["allowed"], false, "{request}");
            assert_eq!(response["uid"], uid, "{request}");
            assert_eq!(response["status"]["code"], 400, "{request}");
            let got = response["status"]["message"].as_str().unwrap_or_default();
            assert!(!got.is_empty(), "{request}");
            if let Some(message) = message {
                assert_eq!(got, message, "{request}");
            }
        }
    }
}
