#include "textflag.h"

// The memory plugin's marks (wire.MemArm … wire.MemDisarm): each is a
// `mov $imm32, %edi` that the plugin recognises by its bytes when QEMU
// translates it, whatever the register holds. BYTE-encoded so that the
// encoding is the one the plugin looks for (BF imm32).

// func memWindowStart()
TEXT ·memWindowStart(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x01; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET

// func memWindowStop()
TEXT ·memWindowStop(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x02; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET

// func memArm()
TEXT ·memArm(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x03; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET

// func memBegin()
TEXT ·memBegin(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x04; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET

// func memEnd()
TEXT ·memEnd(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x05; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET

// func memBeginWide()
TEXT ·memBeginWide(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x07; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET

// func memPause()
TEXT ·memPause(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x08; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET

// func memResume()
TEXT ·memResume(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x09; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET

// func memDisarm()
TEXT ·memDisarm(SB),NOSPLIT,$0-0
	BYTE $0xbf; BYTE $0x06; BYTE $0x4d; BYTE $0x50; BYTE $0x4c
	RET
