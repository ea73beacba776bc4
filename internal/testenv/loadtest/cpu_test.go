package loadtest

import (
	"os"
	"testing"
	"time"
)

func TestStatCPUIsUserPlusSystemTime(t *testing.T) {
	// A command name with a space and a parenthesis, utime 250 ticks,
	// stime 70: 3.2 s.
	line := []byte("4242 (we(ird) name) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 70 0 0 20 0 9 0 100 1000000 500 18446744073709551615\n")
	got, err := statCPU(line)
	if err != nil || got != 3200*time.Millisecond {
		t.Fatalf("statCPU = %v, %v; want 3.2s", got, err)
	}
	// cutime 5 and cstime 15 (fields 16 and 17): the children's 0.2 s.
	children := []byte("4242 (x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 70 5 15 20 0 9 0 100 1000000 500\n")
	if got, err := statTicks(children, 13); err != nil || got != 200*time.Millisecond {
		t.Fatalf("the children's time = %v, %v; want 0.2s", got, err)
	}
	for _, bad := range []string{"4242 no-name S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 2x5 70 0"} {
		if _, err := statCPU([]byte(bad)); err == nil {
			t.Errorf("statCPU(%q): no error", bad)
		}
	}
}

// This process's CPU time grows as it works.
func TestProcessCPUCountsThisProcess(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := 0; ; i++ {
		x += i * i
		if i%(1<<20) != 0 {
			continue
		}
		now, err := ProcessCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now-before >= 50*time.Millisecond {
			break
		}
		if i >= 1<<34 { // tens of seconds of work
			t.Fatalf("CPU time went from %v to %v over %d iterations", before, now, i)
		}
	}
	_ = x
}
