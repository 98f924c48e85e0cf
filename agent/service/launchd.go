package service

import (
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"
)

// LaunchdPlist renders s as a LaunchAgent: started at login (RunAtLoad)
// and kept alive (KeepAlive restarts it after any exit, after a 2 s
// throttle), its output in LogDir.
func LaunchdPlist(s *Spec) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
`)
	kv := func(k, v string) { fmt.Fprintf(&b, "\t<key>%s</key>\n\t<string>%s</string>\n", k, xmlEscape(v)) }
	kv("Label", s.Label())
	b.WriteString("\t<key>ProgramArguments</key>\n\t<array>\n")
	for _, a := range append([]string{s.Executable}, s.Args...) {
		fmt.Fprintf(&b, "\t\t<string>%s</string>\n", xmlEscape(a))
	}
	b.WriteString("\t</array>\n")
	if len(s.Env) > 0 {
		b.WriteString("\t<key>EnvironmentVariables</key>\n\t<dict>\n")
		for _, k := range s.envKeys() {
			fmt.Fprintf(&b, "\t\t<key>%s</key>\n\t\t<string>%s</string>\n", xmlEscape(k), xmlEscape(s.Env[k]))
		}
		b.WriteString("\t</dict>\n")
	}
	b.WriteString("\t<key>RunAtLoad</key>\n\t<true/>\n\t<key>KeepAlive</key>\n\t<true/>\n\t<key>ThrottleInterval</key>\n\t<integer>2</integer>\n\t<key>ProcessType</key>\n\t<string>Background</string>\n")
	if s.LogDir != "" {
		kv("StandardOutPath", filepath.Join(s.LogDir, s.Name+".log"))
		kv("StandardErrorPath", filepath.Join(s.LogDir, s.Name+".log"))
	}
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
