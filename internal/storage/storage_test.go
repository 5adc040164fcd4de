package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/aws/smithy-go"
)

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"nil", nil, nil},
		{"full, wrapped", fmt.Errorf("local dynamodb: %w: %w", ErrFull, syscall.ENOSPC), ErrFull},
		{"failed, wrapped", fmt.Errorf("x: %w", ErrFailed), ErrFailed},
		{"API error, full", fmt.Errorf("meal: create: %w", &smithy.GenericAPIError{Code: FullCode}), ErrFull},
		{"API error, failed", &smithy.GenericAPIError{Code: FailedCode}, ErrFailed},
		{"another API error", &smithy.GenericAPIError{Code: "ConditionalCheckFailedException"}, nil},
		{"a bare ENOSPC is no refusal", syscall.ENOSPC, nil},
	} {
		if got := Refused(tc.err); got != tc.want {
			t.Errorf("%s: Refused(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{&fs.PathError{Op: "write", Path: "j", Err: syscall.ENOSPC}, ErrFull},
		{fmt.Errorf("sync: %w", syscall.EDQUOT), ErrFull},
		// bbolt formats the error with %s.
		{errors.New("file resize error: truncate s3.bolt: no space left on device"), ErrFull},
		{&fs.PathError{Op: "fsync", Path: "j", Err: syscall.EIO}, ErrFailed},
		{errors.New("read-only"), ErrFailed},
	} {
		if got := Cause(tc.err); got != tc.want {
			t.Errorf("Cause(%v) = %v, want %v", tc.err, got, tc.want)
		}
		if got, want := Code(Cause(tc.err)), map[error]string{ErrFull: FullCode, ErrFailed: FailedCode}[tc.want]; got != want {
			t.Errorf("Code(Cause(%v)) = %q, want %q", tc.err, got, want)
		}
	}
}
