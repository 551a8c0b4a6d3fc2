// The linter's rule set (issue #34): typescript-eslint's recommended rules without type information (it runs in
// seconds), plus the few the house relies on. Formatting is prettier's job (.prettierrc.json), not the linter's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      '**/generated/**',
      '.data/**',
      'openapi/dist/**',
      'sdk-seller/src/core/**',
      'sdk-seller/src/receipts/**',
      'server/src/domain/amount.ts',
      'server/src/domain/receipts/attestation.ts',
      'server/src/domain/receipts/jws.ts',
      'local-network/src/amount.ts',
      'local-network/src/cap71-xdr.ts',
      'local-network/src/js-xdr.d.ts',
      'server/dist.next/**',
      'server/.build-test-*/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
      },
    },
    rules: {
      // At most 120 characters a line outside generated files: prettier wraps code, this catches strings and comments.
      'max-len': ['error', { code: 120, ignoreUrls: true, ignoreRegExpLiterals: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // `a && b()` and `c ? d() : e()` as statements are house style; a bare expression that does nothing is not.
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true, allowTernary: true }],
      // Input sanitizers match control characters on purpose (paywall paths, route templates, Bazaar metadata).
      'no-control-regex': 'off',
      // Declarations for an untyped dependency are pulled in where they are used (cap71-xdr.ts).
      '@typescript-eslint/triple-slash-reference': ['error', { path: 'always', types: 'prefer-import', lib: 'always' }],
      'no-console': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Tests and benches may read loosely typed JSON answers.
    files: ['**/test/**', 'scripts/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The SDK README tests hold each README code block verbatim (prettier leaves them alone too: .prettierignore).
    files: ['sdk-buyer/test/readme.test.ts', 'sdk-seller/test/readme.test.ts', 'sdk-seller/test/mcp-readme.test.ts'],
    rules: { 'max-len': 'off' },
  },
  {
    // CommonJS configuration files (Jest's, dependency-cruiser's) and scripts loaded by require().
    files: ['**/*.cjs', '**/jest.config.js', 'test/jest.base.js'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The money path (issue #34): no function over ~80 lines, so each rule and each settle step reads in one screen.
    // The repositories are left out: their factories hold every method in one object literal, and their length is
    // SQL text (one statement each).
    files: [
      'server/src/domain/facilitator/**/*.ts',
      'server/src/domain/payments/**/*.ts',
      'server/src/domain/receipts/**/*.ts',
      'server/src/http/x402/**/*.ts',
      'server/src/http/handlers/x402.ts',
      'server/src/http/handlers/payments.ts',
      'server/src/ledger/**/*.ts',
    ],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }] },
  },
  {
    // The operator dashboard's script runs in the browser, beside uPlot's bundle.
    files: ['server/public/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser, uPlot: 'readonly' } },
  },
);
