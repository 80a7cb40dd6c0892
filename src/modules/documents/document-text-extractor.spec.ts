import { DocumentTextExtractor, htmlToText, TextExtractionError } from './document-text-extractor.js';
import { detectDocumentType } from './document-type.js';

describe('htmlToText', () => {
  it('keeps visible text, one block per line, decodes entities and drops scripts and styles', () => {
    const html = `<!doctype html><html><head><title>T</title><style>p{color:red}</style></head>
      <body><h1>Hello &amp; welcome</h1><script>alert("x<p>")</script><p>First <b>bold</b>
      para</p><ul><li>one</li><li>two</li></ul></body></html>`;
    expect(htmlToText(html)).toBe('Hello & welcome\nFirst bold para\none\ntwo');
  });
});

describe('detectDocumentType', () => {
  it('accepts matching name and content and rejects mismatches', () => {
    expect(detectDocumentType('a.txt', 'text/plain', Buffer.from('hi'))).toMatchObject({ ok: true, mimeType: 'text/plain' });
    expect(detectDocumentType('a.MD', undefined, Buffer.from('# hi'))).toMatchObject({ ok: true, mimeType: 'text/markdown' });
    expect(detectDocumentType('noext', 'text/csv', Buffer.from('a,b'))).toMatchObject({ ok: true, mimeType: 'text/csv' });
    expect(detectDocumentType('a.pdf', 'application/pdf', Buffer.from('hello'))).toMatchObject({ ok: false });
    expect(detectDocumentType('a.txt', 'text/plain', Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0]))).toMatchObject({ ok: false });
    expect(detectDocumentType('a.json', 'application/json', Buffer.from('{nope'))).toMatchObject({ ok: false });
    expect(detectDocumentType('a.exe', 'text/plain', Buffer.from('MZ'))).toMatchObject({ ok: false });
    expect(detectDocumentType('a.docx', undefined, Buffer.from('not a zip'))).toMatchObject({ ok: false });
  });
});

describe('DocumentTextExtractor', () => {
  const extractor = new DocumentTextExtractor();

  it('reports a corrupt PDF as a TextExtractionError', async () => {
    await expect(extractor.extract('pdf', Buffer.from('%PDF-1.4\ngarbage that is not a pdf'))).rejects.toBeInstanceOf(TextExtractionError);
  });

  it('reports a corrupt DOCX as a TextExtractionError', async () => {
    await expect(extractor.extract('docx', Buffer.from([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]))).rejects.toBeInstanceOf(TextExtractionError);
  });
});
