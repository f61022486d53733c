//go:build !amd64

package agent

func memArm()    {}
func memBegin()  {}
func memEnd()    {}
func memDisarm() {}

func memBeginWide() {}
func memPause()     {}
func memResume()    {}

func memWindowStart() {}
func memWindowStop()  {}

const haveMemMarks = false
