import { docxOf, lyingZipBombDocx, nestedHtml, pdfWithPages, zipBombDocx } from '../../../bench/document-builders.js';
import { extractionFailure } from '../../../test/support/extraction-failure.js';
import { extractText, htmlToText } from './document-text-extractor.js';
import { DEFAULT_EXTRACTION_LIMITS } from './extraction-limits.js';
import { detectDocumentType } from './document-type.js';

const MIB = 1024 * 1024;
const LIMITS = DEFAULT_EXTRACTION_LIMITS;
const failure = extractionFailure;

describe('htmlToText', () => {
  it('keeps visible text, one block per line, decodes entities and drops scripts and styles', () => {
    const html = `<!doctype html><html><head><title>T</title><style>p{color:red}</style></head>
      <body><h1>Hello &amp; welcome</h1><script>alert("x<p>")</script><p>First <b>bold</b>
      para</p><ul><li>one</li><li>two</li></ul></body></html>`;
    expect(htmlToText(html)).toBe('Hello & welcome\nFirst bold para\none\ntwo');
  });

  it('does not count elements whose end tag may be omitted as nesting', () => {
    const html = `<ul>${'<li>item'.repeat(5000)}</ul>`;
    expect(htmlToText(html, 100).split('\n')).toHaveLength(5000);
  });
});

describe('detectDocumentType', () => {
  it('accepts matching name and content and rejects mismatches', () => {
    expect(detectDocumentType('a.txt', 'text/plain', Buffer.from('hi'))).toMatchObject({
      ok: true,
      mimeType: 'text/plain',
    });
    expect(detectDocumentType('a.MD', undefined, Buffer.from('# hi'))).toMatchObject({
      ok: true,
      mimeType: 'text/markdown',
    });
    expect(detectDocumentType('noext', 'text/csv', Buffer.from('a,b'))).toMatchObject({
      ok: true,
      mimeType: 'text/csv',
    });
    expect(detectDocumentType('a.pdf', 'application/pdf', Buffer.from('hello'))).toMatchObject({ ok: false });
    expect(detectDocumentType('a.txt', 'text/plain', Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0]))).toMatchObject({
      ok: false,
    });
    expect(detectDocumentType('a.json', 'application/json', Buffer.from('{nope'))).toMatchObject({ ok: false });
    expect(detectDocumentType('a.exe', 'text/plain', Buffer.from('MZ'))).toMatchObject({ ok: false });
    expect(detectDocumentType('a.docx', undefined, Buffer.from('not a zip'))).toMatchObject({ ok: false });
  });
});

describe('extractText', () => {
  it('reads a PDF and a DOCX built by hand', async () => {
    expect(
      await extractText(
        'pdf',
        pdfWithPages(3, (n) => `Hello from page ${n}`),
        LIMITS,
      ),
    ).toBe('Hello from page 1\nHello from page 2\nHello from page 3');
    expect(await extractText('docx', docxOf(['First paragraph', 'Second paragraph']), LIMITS)).toBe(
      'First paragraph\n\nSecond paragraph\n\n',
    );
  });

  it('reports a corrupt PDF and a corrupt DOCX as TextExtractionError', async () => {
    expect(await failure(extractText('pdf', Buffer.from('%PDF-1.4\ngarbage that is not a pdf'), LIMITS))).toMatch(
      /PDF could not be read/,
    );
    expect(await failure(extractText('docx', Buffer.from([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]), LIMITS))).toMatch(
      /DOCX document could not be read/,
    );
  });

  it('refuses a zip bomb from its central directory, before inflating it', async () => {
    const bomb = zipBombDocx(50 * MIB);
    expect(bomb.length).toBeLessThan(MIB);
    expect(await failure(extractText('docx', bomb, LIMITS))).toMatch(
      /expands more than 100 times its compressed size \(EXTRACT_MAX_COMPRESSION_RATIO\)/,
    );
  });

  it('stops inflating a zip bomb whose archive lies about its sizes', async () => {
    expect(await failure(extractText('docx', lyingZipBombDocx(20 * MIB), LIMITS))).toMatch(
      /inflates to more than its declared size/,
    );
    // With an honest directory, the total inflated size is a limit too.
    expect(
      await failure(
        extractText('docx', zipBombDocx(3 * MIB), {
          ...LIMITS,
          maxCompressionRatio: 100_000,
          maxInflatedBytes: 2 * MIB,
        }),
      ),
    ).toMatch(/the archive expands to more than 2 MiB \(EXTRACT_MAX_INFLATED_BYTES\)/);
  });

  it('limits archive entries, pages, nesting and text size, naming each limit', async () => {
    expect(await failure(extractText('docx', docxOf(['x']), { ...LIMITS, maxArchiveEntries: 2 }))).toMatch(
      /more than 2 entries \(EXTRACT_MAX_ARCHIVE_ENTRIES\)/,
    );
    expect(await failure(extractText('pdf', pdfWithPages(30), { ...LIMITS, maxPages: 20 }))).toMatch(
      /the PDF has 30 pages, more than the limit of 20 \(EXTRACT_MAX_PAGES\)/,
    );
    expect(await failure(extractText('html', nestedHtml(5000), LIMITS))).toMatch(
      /nests more than 1000 elements deep \(EXTRACT_MAX_NESTING_DEPTH\)/,
    );
    expect(await failure(extractText('text', Buffer.from('x'.repeat(3000)), { ...LIMITS, maxTextBytes: 2048 }))).toBe(
      'the document expands to more than 2 KiB of text (EXTRACT_MAX_TEXT_BYTES)',
    );
    expect(
      await failure(
        extractText(
          'pdf',
          pdfWithPages(40, () => 'y'.repeat(100)),
          { ...LIMITS, maxTextBytes: 2048 },
        ),
      ),
    ).toMatch(/EXTRACT_MAX_TEXT_BYTES/);
  });
});
