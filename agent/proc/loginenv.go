package proc

import (
	"os/user"
	"runtime"
	"sync"
)

// agentUser is the user the agent runs as, looked up once; nil when it
// cannot be.
var agentUser = sync.OnceValue(func() *user.User {
	u, err := user.Current()
	if err != nil {
		return nil
	}
	return u
})

// loginEnv adds USER, LOGNAME and HOME of the agent's user to environ when
// it lacks them, as a login sets them: an agent started by a service
// manager or in a container often has none, and shells and tools need
// them. Unix only; Windows names them otherwise.
func loginEnv(environ []string) []string {
	u := agentUser()
	if u == nil || runtime.GOOS == "windows" {
		return environ
	}
	for _, kv := range [][2]string{{"USER", u.Username}, {"LOGNAME", u.Username}, {"HOME", u.HomeDir}} {
		if kv[1] != "" && lookupEnv(environ, kv[0]) == "" {
			environ = append(environ, kv[0]+"="+kv[1])
		}
	}
	return environ
}
