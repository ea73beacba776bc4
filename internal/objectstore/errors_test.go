package objectstore

import (
	"errors"
	"testing"
)

func TestKindOfStatus(t *testing.T) {
	for status, want := range map[int]error{
		404: ErrNotFound, 412: ErrPreconditionFailed, 403: ErrAccessDenied, 409: ErrConflict,
		429: ErrTransient, 499: ErrTransient, 500: ErrTransient, 503: ErrTransient, 200: nil, 400: nil,
	} {
		if got := KindOfStatus(status); !errors.Is(got, want) || (want == nil) != (got == nil) {
			t.Errorf("KindOfStatus(%d) = %v, want %v", status, got, want)
		}
	}
}
