// Package storage names the two failures every backend shares and every
// caller must tell from the rest, and bounds every call so that the
// second one is found out in time.
//
// Storage that refuses writes because its disk is full (or otherwise
// cannot be written): local mode's in-process DynamoDB and S3 answer such
// a write with an API error of their own code (FullCode, FailedCode) that
// the SDKs do not retry; Refused recognises it, or the sentinels, anywhere
// in an error chain.
//
// Storage that does not answer: Bounds puts a time budget per kind of
// call (config.Storage) on the DynamoDB and S3 clients main and apptest
// build, gives each attempt a share of it, holds the SDK's retryer to a
// number of attempts and a longest backoff, and turns a call that got no
// answer in time into ErrUnavailable, which the web adapter answers with a
// 503 page. A kind of call that stalls is logged at WARN, at most once a
// minute per service and kind.
//
// It is plumbing: it knows no concept.
package storage

import (
	"errors"
	"strings"
	"syscall"

	"github.com/aws/smithy-go"
)

// The two refusals. Errors from the local backends and their health hook
// wrap one of them (errors.Is), next to the cause.
var (
	// ErrFull is a write refused because the disk is full: the file
	// system answered ENOSPC or EDQUOT.
	ErrFull = errors.New("storage: the disk is full")
	// ErrFailed is a write refused because writing to the disk failed in
	// any other way (an I/O error, a read-only file system).
	ErrFailed = errors.New("storage: the disk cannot be written")
)

// The API error codes local mode's DynamoDB (the __type of a 400 answer)
// and S3 (the Code of a 400 answer's XML) give a refused write. Neither is
// a code of AWS's, and neither is one the SDKs' retryers retry, so the
// refusal reaches the caller at once, as itself.
const (
	FullCode   = "NdiroStorageFull"
	FailedCode = "NdiroStorageFailed"
)

// Refused returns ErrFull or ErrFailed if err is a write storage refused:
// an error wrapping either sentinel, or an SDK error whose API error code
// is FullCode or FailedCode. It returns nil for every other error, nil
// included.
func Refused(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrFull):
		return ErrFull
	case errors.Is(err, ErrFailed):
		return ErrFailed
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case FullCode:
			return ErrFull
		case FailedCode:
			return ErrFailed
		}
	}
	return nil
}

// IsFull reports whether err is a write refused because the disk is full.
func IsFull(err error) bool { return Refused(err) == ErrFull }

// Cause classifies a failed write, fsync or commit of a local backend's
// file: ErrFull for ENOSPC and EDQUOT, ErrFailed for anything else.
// Libraries that flatten the errno into text (bbolt's "file resize
// error: …") are matched by the kernel's message.
func Cause(ioErr error) error {
	if errors.Is(ioErr, syscall.ENOSPC) || errors.Is(ioErr, syscall.EDQUOT) {
		return ErrFull
	}
	if ioErr != nil {
		msg := ioErr.Error()
		if strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error()) {
			return ErrFull
		}
	}
	return ErrFailed
}

// Code returns the API error code of refusal (ErrFull or ErrFailed, as
// Refused and Cause return them): FullCode or FailedCode.
func Code(refusal error) string {
	if refusal == ErrFull {
		return FullCode
	}
	return FailedCode
}
