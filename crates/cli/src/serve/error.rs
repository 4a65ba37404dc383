//! The errors a request can get, each an HTTP status with a JSON body
//! `{"error": "what went wrong"}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Why a request failed. Every variant names the problem in words the page shows as is.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed or asks for something invalid (400).
    #[error("{0}")]
    BadRequest(String),
    /// No such page, run, game, model or search (404).
    #[error("{0}")]
    NotFound(String),
    /// The body is larger than the route accepts (413).
    #[error("{0}")]
    TooLarge(String),
    /// Too many searches running at once (503); the page may retry.
    #[error("{0}")]
    Busy(String),
    /// Something on the server's side failed, e.g. a run file cannot be read (500).
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// A 400 with `message`.
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError::BadRequest(message.into())
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), Json(serde_json::json!({ "error": self.to_string() }))).into_response()
    }
}

impl From<axum::extract::rejection::BytesRejection> for ApiError {
    fn from(e: axum::extract::rejection::BytesRejection) -> ApiError {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge(format!("request body too large: {}", e.body_text()))
        } else {
            ApiError::bad(format!("cannot read the request body: {}", e.body_text()))
        }
    }
}

/// Parses a JSON request body into `T`; a parse error is a 400 naming the line, column and
/// problem (serde's message, e.g. an unknown field or a number out of range).
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad("the request needs a JSON body"));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("malformed JSON request: {e}")))
}
