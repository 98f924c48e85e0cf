package proxy_test

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/outposthq/outpost/proxy"
)

// Fixed names the proxy explicitly, with NO_PROXY's syntax for the hosts
// that go around it.
func ExampleFixed() {
	pick := proxy.Fixed(&url.URL{Scheme: "http", Host: "proxy.corp.example:3128"}, "corp.example, 10.0.0.0/8")
	for _, target := range []string{"https://outpost.example.com", "https://git.corp.example", "https://10.1.2.3:443", "https://127.0.0.1:7070"} {
		u, _ := url.Parse(target)
		p, _ := pick(&http.Request{URL: u})
		fmt.Println(target, "->", p)
	}
	// Output:
	// https://outpost.example.com -> http://proxy.corp.example:3128
	// https://git.corp.example -> <nil>
	// https://10.1.2.3:443 -> <nil>
	// https://127.0.0.1:7070 -> http://proxy.corp.example:3128
}

// A Dialer is a nats.go CustomDialer, and has DialContext for everything
// else. The zero Dialer uses HTTPS_PROXY and NO_PROXY.
func ExampleDialer() {
	d := &proxy.Dialer{Proxy: proxy.Fixed(&url.URL{Scheme: "http", Host: "proxy.corp.example:3128"}, "")}
	p, _ := d.ProxyFor("outpost.example.com:443")
	fmt.Println(p)
	// Output: http://proxy.corp.example:3128
}
