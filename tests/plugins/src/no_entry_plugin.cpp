// A shared library that is not a maf-sandbox plugin: it exports no entry symbol.
extern "C" __attribute__((visibility("default"))) int maf_sandbox_not_a_plugin() { return 42; }
