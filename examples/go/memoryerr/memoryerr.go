// Package memoryerr reads what a failed call to a himga memory server says: the reason of the
// google.rpc.ErrorInfo detail (domain "himga.dev") that tells the kinds of error apart, and the
// fields a google.rpc.BadRequest detail names. Branch on the reason, not on the status code:
// MEMORY_MISMATCH and INCOMPATIBLE_STORE are both FAILED_PRECONDITION.
package memoryerr

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// Domain is the ErrorInfo domain of every error a himga server sends.
const Domain = "himga.dev"

// The reasons a himga server gives (the comments on MemoryService and EpisodeService in
// memory.proto list them).
const (
	// InvalidRequest (INVALID_ARGUMENT): the request breaks a rule; FieldViolations names the
	// fields. Fix the request; retrying it is useless.
	InvalidRequest = "INVALID_REQUEST"
	// MemoryMismatch (FAILED_PRECONDITION): the namespace was opened with another memory than
	// the one the call names.
	MemoryMismatch = "MEMORY_MISMATCH"
	// IncompatibleStore (FAILED_PRECONDITION): the namespace's stored data is in a form this
	// server does not read; the status message says what to do.
	IncompatibleStore = "INCOMPATIBLE_STORE"
	// NotFound (NOT_FOUND): GetEpisode named an id the namespace does not hold.
	NotFound = "NOT_FOUND"
	// Unauthenticated (UNAUTHENTICATED): the server needs a bearer token and got none, or one
	// it does not know.
	Unauthenticated = "UNAUTHENTICATED"
	// PermissionDenied (PERMISSION_DENIED): the token does not grant the call's right on the
	// request's namespace.
	PermissionDenied = "PERMISSION_DENIED"
	// CallerGone (CANCELLED): the call ended before its write committed; nothing was stored.
	CallerGone = "CALLER_GONE"
	// ServerStopping (UNAVAILABLE): the server is stopping; nothing was stored, send it again.
	ServerStopping = "SERVER_STOPPING"
	// StoreUnavailable (UNAVAILABLE): the store cannot write (a full disk); nothing was stored.
	StoreUnavailable = "STORE_UNAVAILABLE"
	// ResourceExhausted (RESOURCE_EXHAUSTED): the server ran out of file descriptors or memory
	// for the call; nothing changed.
	ResourceExhausted = "RESOURCE_EXHAUSTED"
	// Unsupported (FAILED_PRECONDITION): the namespace's memory cannot do what the call asks (a
	// filter, a delete, a listing) and refuses rather than ignore part of the request.
	Unsupported = "UNSUPPORTED"
	// Internal (INTERNAL): the server failed unexpectedly (it logs why).
	Internal = "INTERNAL"
)

// Reason is the ErrorInfo reason of err (which may wrap the gRPC status error), or "" when it
// carries none: not a gRPC error, or a status sent before the server's code ran
// (RESOURCE_EXHAUSTED for an oversized request, UNAVAILABLE, DEADLINE_EXCEEDED).
func Reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			return info.GetReason()
		}
	}
	return ""
}

// FieldViolations are the field violations of the BadRequest details of err, each naming an
// offending field ("items[3].message.role") and the rule it breaks.
func FieldViolations(err error) []*errdetails.BadRequest_FieldViolation {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	var violations []*errdetails.BadRequest_FieldViolation
	for _, detail := range st.Details() {
		if br, ok := detail.(*errdetails.BadRequest); ok {
			violations = append(violations, br.GetFieldViolations()...)
		}
	}
	return violations
}
