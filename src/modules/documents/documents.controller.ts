import { actorFor, idempotencyKeySpace, CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Body, Delete, Get, Headers, Param, Post, Query, UploadedFile, UseInterceptors } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { ApiBody, ApiConsumes, ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { createHash } from 'node:crypto';
import { IdempotencyService } from '../../common/idempotency/idempotency.service.js';
import { AppException } from '../../common/errors/app.exception.js';
import { AllowProjectToken } from '../auth/guards/allow-project-token.decorator.js';
import { DocumentsService } from './documents.service.js';
import { ListDocumentsDto } from './dto/list-documents.dto.js';
import { UploadDocumentDto } from './dto/upload-document.dto.js';
import { UploadLimitInterceptor } from './upload-limit.interceptor.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { page } from '../../common/openapi/openapi-schema.js';
import { DeletedSchema, DocumentSchema } from './documents.schemas.js';
import { ACCEPTED_TYPES } from './document-type.js';
import { BackendController } from '../../common/http/backend-controller.js';

interface UploadedMulterFile {
  originalname: string;
  mimetype: string;
  size: number;
  buffer: Buffer;
}

@ApiTags('documents')
@AllowProjectToken()
@BackendController('api/documents')
export class DocumentsController {
  constructor(
    private readonly documents: DocumentsService,
    private readonly idempotency: IdempotencyService,
  ) {}

  @Post('upload')
  @UseInterceptors(UploadLimitInterceptor, FileInterceptor('file'))
  @ApiConsumes('multipart/form-data')
  @ApiBody({
    schema: {
      type: 'object',
      required: ['file', 'projectId'],
      properties: {
        file: { type: 'string', format: 'binary', description: `${ACCEPTED_TYPES}; at most UPLOAD_MAX_BYTES` },
        projectId: { type: 'string', format: 'uuid' },
        title: { type: 'string', maxLength: 300 },
        isPublic: { type: 'boolean', default: false },
      },
    },
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'A repeat with the same key and the same upload within 24 h returns the first answer',
  })
  @ApiOperation({ summary: 'Upload a file into a project (editor or owner); it is indexed in the background' })
  @ApiData(201, DocumentSchema, 'The document, status uploaded')
  @ApiErrors(403, 404, 409, 413, 415)
  async upload(
    @CurrentCaller() caller: Caller,
    @UploadedFile() file: UploadedMulterFile | undefined,
    @Body() body: UploadDocumentDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
  ) {
    const actor = actorFor(caller, body.projectId);
    if (!file)
      throw AppException.validation('A file is required in the multipart field "file"', [
        { field: 'file', message: 'required' },
      ]);
    const outcome = await this.idempotency.runAuthorized({
      ownerId: actor.userId,
      scope: idempotencyKeySpace(caller, 'documents:upload'),
      key: idempotencyKey,
      request: {
        projectId: body.projectId,
        title: body.title ?? null,
        isPublic: body.isPublic ?? null,
        fileName: file.originalname,
        sha256: createHash('sha256').update(file.buffer).digest('hex'),
      },
      authorize: () => this.documents.authorizeUpload(actor, body.projectId),
      work: () =>
        this.documents.upload(actor, {
          projectId: body.projectId,
          title: body.title,
          isPublic: body.isPublic,
          file: { originalName: file.originalname, mimeType: file.mimetype, bytes: file.buffer },
        }),
    });
    return outcome.value;
  }

  @Get()
  @ApiOperation({ summary: 'Documents of a project visible to the caller, newest first' })
  @ApiData(200, page(DocumentSchema), 'A page of documents')
  @ApiErrors(404)
  list(@CurrentCaller() caller: Caller, @Query() query: ListDocumentsDto) {
    return this.documents.list(actorFor(caller, query.projectId), query);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One document (its author, or any member of its project when public)' })
  @ApiData(200, DocumentSchema, 'The document')
  @ApiErrors(404)
  get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return this.documents.get(actorFor(caller), id);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete a document and its chunks (author only)' })
  @ApiData(200, DeletedSchema, 'Deleted')
  @ApiErrors(403, 404)
  remove(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return this.documents.delete(actorFor(caller), id);
  }
}
