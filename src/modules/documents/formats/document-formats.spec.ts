import { ACCEPTED_TYPES, DOCUMENT_FORMATS, formatOfExtension, formatOfKind, formatOfMime } from './document-formats.js';

/** Samples each format must accept, and bytes of another kind it must refuse: a new format adds its line. */
const SAMPLES: Record<(typeof DOCUMENT_FORMATS)[number]['kind'], { good: Buffer; bad: Buffer }> = {
  text: { good: Buffer.from('plain words'), bad: Buffer.from([0x00, 0x01, 0x02]) },
  markdown: { good: Buffer.from('# Title\n\nbody'), bad: Buffer.from([0xff, 0xfe, 0x00]) },
  html: { good: Buffer.from('<p>hi</p>'), bad: Buffer.from([0xc3, 0x28]) },
  csv: { good: Buffer.from('a,b\n1,2\n'), bad: Buffer.from([0x00]) },
  json: { good: Buffer.from('{"a":1}'), bad: Buffer.from('{not json') },
  pdf: { good: Buffer.from('%PDF-1.7\n...'), bad: Buffer.from('plain words') },
  docx: { good: Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14]), bad: Buffer.from('%PDF-1.7') },
};

describe('document formats (the registry of accepted upload types)', () => {
  it('names every kind, MIME type and extension once', () => {
    const kinds = DOCUMENT_FORMATS.map((format) => format.kind);
    const mimes = DOCUMENT_FORMATS.map((format) => format.mimeType);
    const extensions = DOCUMENT_FORMATS.flatMap((format) => [...format.extensions]);
    expect(new Set(kinds).size).toBe(kinds.length);
    expect(new Set(mimes).size).toBe(mimes.length);
    expect(new Set(extensions).size).toBe(extensions.length);
    for (const extension of extensions) expect(extension).toMatch(/^\.[a-z0-9]+$/);
  });

  it('finds each format again by kind, MIME type and every extension', () => {
    for (const format of DOCUMENT_FORMATS) {
      expect(formatOfKind(format.kind)).toBe(format);
      expect(formatOfMime(format.mimeType)).toBe(format);
      for (const extension of format.extensions) expect(formatOfExtension(extension)).toBe(format);
    }
    expect(formatOfExtension('.exe')).toBeUndefined();
  });

  it('lists the accepted types by their first extension', () => {
    expect(ACCEPTED_TYPES).toBe('txt, md, html, csv, json, pdf, docx');
  });

  it.each(DOCUMENT_FORMATS.map((format) => [format.kind, format] as const))(
    '%s accepts its sample and refuses other bytes',
    (kind, format) => {
      expect(format.checkContent(SAMPLES[kind].good)).toBeUndefined();
      expect(format.checkContent(SAMPLES[kind].bad)).toEqual(expect.any(String));
    },
  );

  it('refuses text that is not strict UTF-8 (an overlong form, a lone surrogate, a cut sequence) and accepts any valid script', () => {
    for (const kind of ['text', 'markdown', 'html', 'csv', 'json'] as const) {
      const format = formatOfKind(kind);
      for (const bad of [
        [0xc0, 0xaf],
        [0xed, 0xa0, 0x80],
        [0x61, 0xe2, 0x82],
      ])
        expect(format.checkContent(Buffer.from(bad))).toEqual(expect.any(String));
    }
    expect(formatOfKind('text').checkContent(Buffer.from('\ufeffZürich, 東京, 🙂'))).toBeUndefined();
  });
});
