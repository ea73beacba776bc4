package admit

import (
	"errors"
	"testing"
)

func TestCanonicalPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"/shop/cart", "/shop/cart"},
		{"/shop/../public", "/public"},
		{"/shop/%2e%2e/public", "/public"}, // %2e is '.': decoded, then resolved
		{"/shop/%2E%2E/", "/"},
		{"/shop/./cart", "/shop/cart"},
		{"/shop/.", "/shop/"},
		{"/shop/..", "/"},
		{"/../../etc", "/etc"},
		{"//shop//cart//", "/shop/cart/"},
		{"/%7Eann/%41%62c", "/~ann/Abc"},                           // unreserved escapes decoded
		{"/caf%c3%a9/", "/caf%C3%A9/"},                             // other escapes kept, in upper case
		{"/a%20b%3F%23%25", "/a%20b%3F%23%25"},                     // including what would change the URL
		{"/shop/cart;jsessionid=abc", "/shop/cart;jsessionid=abc"}, // parameters pass unchanged
		{"/a\"b<c>{d}|^`", "/a%22b%3Cc%3E%7Bd%7D%7C%5E%60"},
		{"/caf\xc3\xa9", "/caf%C3%A9"},
		{"/.well-known/x", "/.well-known/x"},
		{"/a/..b/.c/...", "/a/..b/.c/..."},
	} {
		got, err := CanonicalPath(c.in)
		if err != nil || got != c.want {
			t.Errorf("CanonicalPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if again, err := CanonicalPath(got); err != nil || again != got {
			t.Errorf("not idempotent: %q gives %q, then %q (%v)", c.in, got, again, err)
		}
	}
	for _, c := range []struct {
		in   string
		want error
	}{
		{"/shop/..%2fpublic", ErrEncodedSlash},
		{"/shop/..%2Fpublic", ErrEncodedSlash},
		{"/shop%5c..%5Cpublic", ErrEncodedSlash},
		{`/shop\..\public`, ErrEncodedSlash},
		{"/public/..;x/shop/", ErrBadPath}, // servlet containers read it as ..
		{"/public/%2e;x/shop/", ErrBadPath},
		{"*", ErrBadPath},
		{"shop", ErrBadPath},
		{"/a%2", ErrBadPath},
		{"/a%zz", ErrBadPath},
	} {
		if got, err := CanonicalPath(c.in); !errors.Is(err, c.want) {
			t.Errorf("CanonicalPath(%q) = %q, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestSegmentParamsRemoved(t *testing.T) {
	for in, want := range map[string]string{
		"/shop/cart":                "/shop/cart",
		"/shop/cart;jsessionid=abc": "/shop/cart",
		"/shop;v=1/cart;a;b/":       "/shop/cart/",
		"/;x":                       "/",
	} {
		if got := SegmentParamsRemoved(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
