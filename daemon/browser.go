package daemon

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// browserRefusal says why a request admitted on the TCP listener without
// the token is refused as one a web page made ("" to serve it). A browser
// runs as the user, so its connections pass the same-user check: without
// this any page could drive the daemon. A cross-site page sends simple
// POSTs (text/plain bodies need no CORS preflight), which carry its
// Origin and "Sec-Fetch-Site: cross-site"; a page whose DNS name is
// rebound to 127.0.0.1 is same-origin to the browser and reads the
// answers too, but names itself in Host. So a request is refused when
// its Host is a DNS name other than localhost, or when its Origin or
// Sec-Fetch-Site says it comes from a site that is not this machine's
// loopback. Clients outside a browser send neither header and address
// the daemon as 127.0.0.1, [::1] or localhost; one that sends the token
// is never a page's forgery and is not checked.
func browserRefusal(r *http.Request) string {
	if !loopbackHost(r.Host) {
		return fmt.Sprintf("Host %q is not localhost or an IP address: a DNS name rebound to the loopback is how a web page reaches a local daemon "+
			"(address ruvllmd as 127.0.0.1 or localhost, or send the token)", r.Host)
	}
	if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
		return fmt.Sprintf("Origin %q: requests from web pages are refused (a page must not drive the user's daemon)", o)
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "Sec-Fetch-Site: cross-site: requests from web pages are refused (a page must not drive the user's daemon)"
	}
	return ""
}

// loopbackHost reports whether a Host header (with or without a port)
// names this machine in a way no DNS answer can change: empty (HTTP/1.0),
// an IP address, localhost or a name under .localhost (RFC 6761).
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" || net.ParseIP(host) != nil {
		return true
	}
	host = strings.ToLower(host)
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// loopbackOrigin reports whether an Origin header names a page served
// from this machine's loopback over http or https ("null", file: and
// other schemes are not).
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}
