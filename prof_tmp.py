import cProfile, pstats, stencil
from benchmarks.tool_calls import tool_set, compile_tools
from benchmarks.tokenizers import load_tokenizer
info, _ = load_tokenizer("deepseek")
tools = tool_set(128, 0)
compile_tools(stencil.GrammarCompiler(info), "qwen", tool_set(2, 5))
pr = cProfile.Profile(); pr.enable()
compile_tools(stencil.GrammarCompiler(info), "qwen", tools)
pr.disable()
st = pstats.Stats(pr); st.sort_stats("cumulative").print_stats(30)
