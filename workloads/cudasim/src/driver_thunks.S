/*
 * The thunk-shaped stand-in driver (build/lib-thunk/libcuda.so.1): every
 * exported entry point is a dispatch thunk of the shape NVIDIA's real
 * libcuda.so.1 has, jumping through a table to driver.c's implementation.
 *
 * Mirrors libcuda.so.535.261.03 (Debian bookworm non-free, libcuda1), where
 * all 600 exported cu* functions are 30-byte thunks, 32-byte aligned:
 *
 *     81 3d <disp32> 00 ba 1c 32   cmpl  $0x321cba00,disp(%rip)   is the driver torn down?
 *     74 0c                        je    +12                      to the error return
 *     ff 25 <disp32>               jmp   *disp(%rip)              a slot of a table in .data
 *     66 0f 1f 44 00 00            nopw  0x0(%rax,%rax,1)
 *     b8 04 00 00 00               mov   $0x4,%eax                CUDA_ERROR_DEINITIALIZED
 *     c3                           ret
 *
 * tests/cudasim/test_cudasim.py compares these bytes, displacements aside,
 * with objdump's disassembly of both libraries. The first instruction is one
 * the kernel single-steps under a uprobe; the `je` is one it emulates.
 *
 * The Makefile generates driver_thunk_list.s (one `cusim_thunk NAME` per
 * function the C-built driver exports) and renames driver.c's functions to
 * cusim_impl_NAME, which the version script keeps out of the exports.
 */

#define DRIVER_TORN_DOWN 0x321cba00
#define CUDA_ERROR_DEINITIALIZED 4

	.bss
	.p2align 2
	.hidden cusim_driver_state
cusim_driver_state:
	.zero 4

.macro cusim_thunk name
	.pushsection .data
	.p2align 3
cusim_slot_\name:
	.quad cusim_impl_\name
	.popsection
	.globl \name
	.type \name, @function
	.p2align 5
\name:
	cmpl $DRIVER_TORN_DOWN, cusim_driver_state(%rip)
	je 1f
	jmp *cusim_slot_\name(%rip)
	/* nopw 0x0(%rax,%rax,1) in the 6-byte form the real one has (gas picks 5 bytes) */
	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00
1:	mov $CUDA_ERROR_DEINITIALIZED, %eax
	ret
	.size \name, . - \name
.endm

	.text
	.include "driver_thunk_list.s"

/* Like the real driver, calls made after it is torn down (at exit) fail at once. */
	.p2align 4
	.type cusim_driver_teardown, @function
cusim_driver_teardown:
	movl $DRIVER_TORN_DOWN, cusim_driver_state(%rip)
	ret
	.size cusim_driver_teardown, . - cusim_driver_teardown

	.section .fini_array, "aw"
	.p2align 3
	.quad cusim_driver_teardown

	.section .note.GNU-stack, "", @progbits
