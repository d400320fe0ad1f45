package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"

	"github.com/toolhost/toolhost/host/toolerr"
)

// Codes the HTTP layer adds to the host's call codes. Every error body is
// {"error":{"code":…,"message":…}}.
const (
	CodeUnauthorized     toolerr.Code = "unauthorized"
	CodeForbidden        toolerr.Code = "forbidden"
	CodeNotFound         toolerr.Code = "not_found"
	CodeMethodNotAllowed toolerr.Code = "method_not_allowed"
	CodeInvalidRequest   toolerr.Code = "invalid_request"
	CodePayloadTooLarge  toolerr.Code = "payload_too_large"
	CodeRequestTimeout   toolerr.Code = "request_timeout"
)

// bodyReadError is the error for a request body that could not be read:
// 408 when the client did not send it within the server's read timeout
// (30 s), else 400; the message says what to do, not which socket failed.
func bodyReadError(err error) *toolerr.Error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return toolerr.Errorf(CodeRequestTimeout, "the request body did not arrive within the server's read timeout (30 s): send the whole body at once, with a Content-Length or a finished chunked encoding")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return toolerr.Errorf(CodeInvalidRequest, "the request body ended before its declared length: send the whole body")
	}
	return toolerr.Errorf(CodeInvalidRequest, "cannot read the request body (%v): send it again", err)
}

// statusFor maps an error code to its HTTP status.
//
// The tool-execution failures (memory_limit, output_too_large,
// plugin_error, invalid_module, permission_denied) are 422: the request was
// well formed and reached the tool, and the tool could not produce a result;
// retrying the same call will not help, and the code in the body says why.
// busy is 429 with Retry-After: a retry soon is expected to succeed, while
// 503 is kept for plugin_unavailable (the plugin cannot run until an
// operator acts, e.g. a revoked curator key).
func statusFor(code toolerr.Code) int {
	switch code {
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden, toolerr.CodeDenied:
		return http.StatusForbidden
	case toolerr.CodeToolNotFound, CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case toolerr.CodeInvalidArguments, CodeInvalidRequest:
		return http.StatusBadRequest
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeRequestTimeout:
		return http.StatusRequestTimeout
	case toolerr.CodeBusy:
		return http.StatusTooManyRequests
	case toolerr.CodeTimeout:
		return http.StatusGatewayTimeout
	case toolerr.CodeUnavailable:
		return http.StatusServiceUnavailable
	case toolerr.CodeMemoryLimit, toolerr.CodeOutputTooLarge, toolerr.CodePluginError,
		toolerr.CodeInvalidModule, toolerr.CodePermissionDenied:
		return http.StatusUnprocessableEntity
	default:
		return http.StatusInternalServerError
	}
}

// asError returns err as a host error, classifying anything else as
// internal_error.
func asError(err error) *toolerr.Error {
	var he *toolerr.Error
	if errors.As(err, &he) {
		return he
	}
	return &toolerr.Error{Code: toolerr.CodeInternal, Message: err.Error()}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    toolerr.Code `json:"code"`
	Message string       `json:"message"`
}

func writeError(w http.ResponseWriter, e *toolerr.Error) {
	switch e.Code {
	case toolerr.CodeBusy:
		w.Header().Set("Retry-After", "1")
	case CodeUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost"`)
	}
	writeJSON(w, statusFor(e.Code), errorBody{errorDetail{e.Code, e.Message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data, _ = json.Marshal(errorBody{errorDetail{toolerr.CodeInternal, "cannot encode the response: " + err.Error()}})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
