package console_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/outposttest"
)

// TestConsoleDeviceApproval: a machine asks for a device code; its
// verificationUri opens the console's approval page with the code filled
// in and the machine's name, host and OS shown; Approve lets the machine's
// token poll succeed.
func TestConsoleDeviceApproval(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	body, _ := json.Marshal(map[string]string{"publicKey": pub, "name": "devbox", "hostname": "devbox.local", "os": "linux", "arch": "amd64"})
	res, err := http.Post(env.Server.URL()+"/v1/device/code", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var dc struct {
		DeviceCode, UserCode, VerificationURI, VerificationURIComplete string
	}
	err = json.NewDecoder(res.Body).Decode(&dc)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || dc.VerificationURIComplete != env.Server.URL()+"/device?code="+dc.UserCode {
		t.Fatalf("device code: %d %+v %v", res.StatusCode, dc, err)
	}
	p := newPage(t)
	p.run("open", chromedp.Navigate(dc.VerificationURIComplete), chromedp.WaitVisible(`input[name="token"]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name="token"]`, env.Server.AdminToken()+kb.Enter, chromedp.ByQuery))
	p.waitText(`main h1`, regexp.MustCompile(`^Device login$`))
	p.waitText(`main table`, regexp.MustCompile(`devbox\.local`))
	p.waitText(`main table`, regexp.MustCompile(`OS\s+linux/amd64`))
	p.run("approve", chromedp.Evaluate(`document.querySelector('input[name="agent"]').value = "devbox"`, nil), chromedp.Click(`//button[text()="Approve"]`))
	p.waitText(`main p[role="status"]`, regexp.MustCompile(`^Approved `+regexp.QuoteMeta(dc.UserCode)+` \(agent devbox, host devbox\.local, linux\)`))
	tb, _ := json.Marshal(map[string]string{"deviceCode": dc.DeviceCode})
	res, err = http.Post(env.Server.URL()+"/v1/device/token", "application/json", bytes.NewReader(tb))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("the machine's token poll after approval: %d, want 200", res.StatusCode)
	}
	p.checkClean()
}
