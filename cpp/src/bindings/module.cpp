// The extension module only registers the bound classes; each lives in its own file.
#include "bindings/bindings.h"

NB_MODULE(_core, m) {
  bind_errors(m);
  bind_vocabulary(m);
  bind_grammar(m);
  bind_matcher(m);
  bind_batch(m);
  bind_logits(m);
  bind_limits(m);
  bind_memory(m);
}
