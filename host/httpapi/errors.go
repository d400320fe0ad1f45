package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/sandbox"
)

// Codes the HTTP layer adds to the host's call codes. Every error body is
// {"error":{"code":…,"message":…}}.
const (
	CodeUnauthorized     sandbox.Code = "unauthorized"
	CodeForbidden        sandbox.Code = "forbidden"
	CodeNotFound         sandbox.Code = "not_found"
	CodeMethodNotAllowed sandbox.Code = "method_not_allowed"
	CodeInvalidRequest   sandbox.Code = "invalid_request"
	CodePayloadTooLarge  sandbox.Code = "payload_too_large"
)

// statusFor maps an error code to its HTTP status.
//
// The tool-execution failures (memory_limit, output_too_large,
// plugin_error, invalid_module, permission_denied) are 422: the request was
// well formed and reached the tool, and the tool could not produce a result;
// retrying the same call will not help, and the code in the body says why.
// busy is 429 with Retry-After: a retry soon is expected to succeed, while
// 503 is kept for plugin_unavailable (the plugin cannot run until an
// operator acts, e.g. a revoked curator key).
func statusFor(code sandbox.Code) int {
	switch code {
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case host.CodeToolNotFound, CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case host.CodeInvalidArguments, CodeInvalidRequest:
		return http.StatusBadRequest
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case sandbox.CodeBusy:
		return http.StatusTooManyRequests
	case sandbox.CodeTimeout:
		return http.StatusGatewayTimeout
	case sandbox.CodeUnavailable:
		return http.StatusServiceUnavailable
	case sandbox.CodeMemoryLimit, sandbox.CodeOutputTooLarge, sandbox.CodePluginError,
		sandbox.CodeInvalidModule, sandbox.CodePermissionDenied:
		return http.StatusUnprocessableEntity
	default:
		return http.StatusInternalServerError
	}
}

// asError returns err as a host error, classifying anything else as
// internal_error.
func asError(err error) *host.Error {
	var he *host.Error
	if errors.As(err, &he) {
		return he
	}
	return &host.Error{Code: sandbox.CodeInternal, Message: err.Error()}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    sandbox.Code `json:"code"`
	Message string       `json:"message"`
}

func writeError(w http.ResponseWriter, e *host.Error) {
	switch e.Code {
	case sandbox.CodeBusy:
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
		data, _ = json.Marshal(errorBody{errorDetail{sandbox.CodeInternal, "cannot encode the response: " + err.Error()}})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
