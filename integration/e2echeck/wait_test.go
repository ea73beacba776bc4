package e2echeck

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// slowDownWrite is a distributed MinIO's answer while a restarted node
// heals, as the S3 store returns it.
var slowDownWrite = &objectstore.Error{Op: "put", Bucket: "cluster-src", Key: "gen/00/000000.bin", Code: "SlowDownWrite",
	StatusCode: 503, Message: "Resource requested is unwritable, please reduce your request rate", Kind: objectstore.ErrTransient}

// A store that throttles for a while is waited out; an answer that will not
// change is not; a store that keeps throttling fails at the bound, saying
// what it waited for.
func TestRetryWaitsOutAThrottlingStore(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := Retry(ctx, time.Minute, "put", func() error {
		if calls++; calls < 3 {
			return slowDownWrite
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("throttled twice: %v after %d calls; want success on the third", err, calls)
	}

	calls = 0
	missing := &objectstore.Error{Op: "get", Code: "NoSuchKey", StatusCode: 404, Kind: objectstore.ErrNoSuchKey}
	if err := Retry(ctx, time.Minute, "read", func() error { calls++; return missing }); !errors.Is(err, objectstore.ErrNoSuchKey) || calls != 1 {
		t.Errorf("a missing key: %v after %d calls; want it at once", err, calls)
	}
	calls = 0
	if err := Retry(ctx, time.Minute, "fetch", func() error { calls++; return &StatusError{Status: 404} }); err == nil || calls != 1 {
		t.Errorf("an edge's 404: %v after %d calls; want it at once", err, calls)
	}

	calls = 0
	err = Retry(ctx, time.Millisecond, "seed the source", func() error { calls++; return slowDownWrite })
	if !errors.Is(err, objectstore.ErrTransient) || !strings.Contains(err.Error(), "seed the source: still failing after 1 tries in 1ms (the bound)") ||
		!strings.Contains(err.Error(), "SlowDownWrite") {
		t.Errorf("throttling past the bound: %v; want it named, with the store's answer", err)
	}
	if !Transient(&StatusError{Status: 503}) || Transient(&StatusError{Status: 404}) {
		t.Error("an edge's 503 is transient, its 404 is not")
	}
}
