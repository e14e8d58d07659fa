// A wall-clock limit on the compilation running in this thread (GrammarCompiler's
// compile_timeout). The compiler's long loops (derivatives, emptiness searches) call check()
// now and then; matching never sets a limit, so the lazy lexer's work during generation is not
// affected by it.
#pragma once

namespace stencil::deadline {

// Limit the current thread's work to `seconds` from now; seconds <= 0 lifts the limit.
void set(double seconds);
// Throws CompileTimeout when the current thread's limit has passed.
void check();

}  // namespace stencil::deadline
