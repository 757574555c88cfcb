package serve

import (
	"errors"
	"fmt"
	"net/http"

	"gorstar/engine"
	"gorstar/internal/plainjson"
	"gorstar/openai"
)

// apiError is an error with the HTTP status and OpenAI error type to report it with.
type apiError struct {
	status  int
	typ     string
	param   string
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, message: fmt.Sprintf(format, args...)}
}

// writeError sends err as an OpenAI error body. Engine errors are classified: a request it can
// never run is the client's (400), a full queue is 429, a closed engine 503, anything else 500.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, engine.ErrRequest):
		ae = &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", message: err.Error()}
	case errors.Is(err, engine.ErrBusy):
		ae = &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", message: err.Error() + "; retry later"}
	case errors.Is(err, engine.ErrClosed):
		ae = &apiError{status: http.StatusServiceUnavailable, typ: "server_error", message: "the server is shutting down"}
	default:
		ae = &apiError{status: http.StatusInternalServerError, typ: "server_error", message: err.Error()}
	}
	plainjson.WriteHTTP(w, ae.status, openai.ErrorResponse{Error: openai.ErrorBody{Message: ae.message, Type: ae.typ,
		Param: nilIfEmpty(ae.param), Code: nilIfEmpty(ae.code)}})
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
