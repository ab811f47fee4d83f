/* Nothing to import: this target only supplies symbols that libdbus-1.a refers to when `keywell`
   links libdbus statically (Package.swift, scripts/lib/link-keywell, docs/performance.md). */
