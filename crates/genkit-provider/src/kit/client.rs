//! [`ProviderClient`]: a provider's HTTP client.

use super::*;

/// A provider's HTTP client: base URL, credentials, headers and timeout,
/// with failures read as [`ProviderError`]s.
#[derive(Debug, Clone)]
pub struct ProviderClient {
    http: HttpClient,
    api_key: Option<ApiKey>,
    key_header: KeyHeader,
    missing_key: Option<String>,
    timeout: Option<Duration>,
}

impl ProviderClient {
    pub(super) fn new<M: Spec>(info: &ProviderInfo, setup: &PluginSetup<M>) -> Result<Self> {
        validate_name(&setup.name)?;
        validate_http_url("base URL", &setup.base_url)?;
        let on_default =
            setup.base_url.trim_end_matches('/') == info.default_base_url.trim_end_matches('/');
        let key_env = if on_default { info.key_env } else { &[] };
        let env_key = || ApiKey::from_env_vars(key_env);
        let api_key = setup.api_key.clone().or_else(env_key);
        let required = setup
            .require_api_key
            .unwrap_or(info.key_required && on_default);
        let missing_key = required.then(|| {
            format!(
                "plugin `{}` has no API key: call `.api_key(..)` on the {} builder or set {}",
                setup.name,
                info.display,
                info.key_env.join(" or ")
            )
        });
        let mut headers = header_map(&setup.headers)?;
        for (name, value) in info.headers {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let http = match &setup.http_client {
            Some(client) => client.clone(),
            None => HttpClientBuilder::new()
                .user_agent(USER_AGENT)
                .connect_timeout(setup.timeout.unwrap_or(MAX_CONNECT_TIMEOUT))
                .build()?,
        };
        let deadline = setup.timeout.map_or(Deadline::None, Deadline::PerWait);
        Ok(Self {
            http: HttpClient::new(http, &setup.base_url, deadline).with_headers(headers),
            api_key,
            key_header: info.key_header,
            missing_key,
            timeout: setup.timeout,
        })
    }

    /// A failed exchange as a [`ProviderError`].
    pub fn error<F: ErrorFormat>(&self, e: HttpError) -> ProviderError<F> {
        ProviderError::from_http(e, self.timeout)
    }

    fn authorize<F: ErrorFormat>(
        &self,
        request: reqwest::RequestBuilder,
        key: Option<&ApiKey>,
    ) -> std::result::Result<reqwest::RequestBuilder, ProviderError<F>> {
        let Some(key) = key.or(self.api_key.as_ref()) else {
            let missing = self.missing_key.clone();
            return missing.map_or(Ok(request), |m| Err(ProviderError::MissingApiKey(m)));
        };
        let (name, value) = match self.key_header {
            KeyHeader::Bearer => (AUTHORIZATION, key.bearer_header_value()),
            KeyHeader::Named(name) => (HeaderName::from_static(name), key.header_value()),
        };
        let value = value?;
        Ok(request.header(name, value))
    }

    /// `POST <base>/<path>` with a JSON body (and `key` instead of the
    /// plugin's, if given); the response once its headers arrived with a
    /// success status.
    pub async fn post<F: ErrorFormat>(
        &self,
        path: &str,
        body: &Value,
        key: Option<&ApiKey>,
    ) -> std::result::Result<reqwest::Response, ProviderError<F>> {
        let request = self.authorize(self.http.post(path).json(body), key)?;
        self.http.send(request).await.map_err(|e| self.error(e))
    }

    /// `GET <base>/<path>`, as [`post`](Self::post).
    pub async fn get<F: ErrorFormat>(
        &self,
        path: &str,
    ) -> std::result::Result<reqwest::Response, ProviderError<F>> {
        let request = self.authorize(self.http.get(path), None)?;
        self.http.send(request).await.map_err(|e| self.error(e))
    }

    /// The whole body of a response.
    pub async fn read_body<F: ErrorFormat>(
        &self,
        response: reqwest::Response,
    ) -> std::result::Result<Bytes, ProviderError<F>> {
        self.http
            .read_bytes(response)
            .await
            .map_err(|e| self.error(e))
    }

    /// The frames of a streamed response.
    pub fn frames(&self, response: reqwest::Response, format: StreamFormat) -> FrameReader {
        match format {
            StreamFormat::Sse => self.http.sse(response),
            StreamFormat::Ndjson { max_line } => self.http.ndjson(response, max_line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider_error::tests::TestApi;

    const INFO: ProviderInfo = ProviderInfo {
        key_header: KeyHeader::Named("x-key"),
        key_env: &["GENKIT_PROVIDER_TEST_SURELY_UNSET_KEY"],
        key_required: true,
        ..ProviderInfo::new("Test", "test", "https://api.test/v1")
    };

    fn setup(base_url: &str) -> PluginSetup<crate::ModelSpec> {
        PluginSetup {
            name: "test".into(),
            base_url: base_url.to_owned(),
            api_key: None,
            require_api_key: None,
            timeout: None,
            headers: Vec::new(),
            http_client: None,
            models: SpecList::default(),
            embedders: SpecList::default(),
        }
    }

    fn authorized(client: &ProviderClient) -> std::result::Result<bool, ProviderError<TestApi>> {
        let request = reqwest::Client::new().get("http://127.0.0.1:9/");
        let request = client
            .authorize::<TestApi>(request, None)?
            .build()
            .map_err(|e| ProviderError::unencodable("the request", e))?;
        Ok(request.headers().contains_key("x-key"))
    }

    #[test]
    fn keys_are_required_only_by_the_providers_own_server() {
        let own = ProviderClient::new(&INFO, &setup("https://api.test/v1/")).unwrap();
        let err = authorized(&own).unwrap_err();
        assert!(matches!(err, ProviderError::MissingApiKey(_)), "{err}");
        assert!(
            err.to_string()
                .contains("GENKIT_PROVIDER_TEST_SURELY_UNSET_KEY")
        );
        let elsewhere = ProviderClient::new(&INFO, &setup("http://127.0.0.1:8080")).unwrap();
        assert!(!authorized(&elsewhere).unwrap());
        let mut keyed = setup("http://127.0.0.1:8080");
        keyed.api_key = Some(ApiKey::new("k-1"));
        let keyed = ProviderClient::new(&INFO, &keyed).unwrap();
        assert!(authorized(&keyed).unwrap());
        assert!(!format!("{keyed:?}").contains("k-1"));
    }

    #[test]
    fn bad_setups_are_invalid_arguments() {
        assert!(ProviderClient::new(&INFO, &setup("ftp://x")).is_err());
        let mut unnamed = setup("http://x");
        unnamed.name = String::new();
        assert!(ProviderClient::new(&INFO, &unnamed).is_err());
        let mut bad_header = setup("http://x");
        bad_header.headers.push(("bad name".into(), "v".into()));
        let err = ProviderClient::new(&INFO, &bad_header).unwrap_err();
        assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
    }

    #[test]
    fn a_key_no_header_can_carry_is_refused_as_such() {
        let mut keyed = setup("http://127.0.0.1:8080");
        keyed.api_key = Some(ApiKey::new("k-1\nX-Injected: 1"));
        let client = ProviderClient::new(&INFO, &keyed).unwrap();
        let err = authorized(&client).unwrap_err();
        assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
        assert!(
            matches!(
                err,
                ProviderError::InvalidApiKey(crate::secret::InvalidKeyHeader)
            ),
            "{err:?}"
        );
        let err = genkit_core::Error::from(err);
        assert_eq!(
            err.message(),
            "the API key holds characters that cannot be sent in an HTTP header"
        );
        assert!(!format!("{err:?}").contains("k-1"));
    }
}
