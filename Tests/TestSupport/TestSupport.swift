// Test helpers
