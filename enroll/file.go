package enroll

import "github.com/outposthq/outpost/internal/secretfile"

// ErrInsecureFile is returned (wrapped) when a secret file can be read or
// written by group or others.
var ErrInsecureFile = secretfile.ErrInsecure
