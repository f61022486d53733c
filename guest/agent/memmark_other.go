//go:build !amd64

package agent

func memArm()    {}
func memBegin()  {}
func memEnd()    {}
func memDisarm() {}

const haveMemMarks = false
