package git

import "testing"

// The fuzz targets check that the parsers never panic and that what they
// accept is well formed.

func FuzzParseStatus(f *testing.F) {
	for _, tc := range statusCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStatus(b)
		if err != nil {
			return
		}
		for _, e := range st.Entries {
			if e.Path == "" && e.Kind != KindUntracked && e.Kind != KindIgnored {
				t.Errorf("entry without a path: %+v", e)
			}
			if e.Kind == KindRenamed && (e.Score < 0 || e.Score > 100) {
				t.Errorf("score out of range: %+v", e)
			}
		}
		if st.Branch.Ahead < 0 || st.Branch.Behind < 0 {
			t.Errorf("negative ahead/behind: %+v", st.Branch)
		}
	})
}

func FuzzParseNumstat(f *testing.F) {
	for _, tc := range numstatCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := ParseNumstat(b)
		if err != nil {
			return
		}
		for _, d := range files {
			if d.Path == "" || d.Added < 0 || d.Deleted < 0 || d.Binary && d.Added+d.Deleted != 0 {
				t.Errorf("malformed file accepted: %+v", d)
			}
		}
	})
}

func FuzzParseLog(f *testing.F) {
	for _, tc := range logCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		commits, err := ParseLog(b)
		if err != nil {
			return
		}
		for _, c := range commits {
			if c.OID == "" || c.Time.IsZero() {
				t.Errorf("malformed commit accepted: %+v", c)
			}
		}
	})
}
