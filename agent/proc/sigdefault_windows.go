package proc

// resetChildSignals does nothing: Windows processes inherit no signal
// dispositions.
func resetChildSignals() {}
